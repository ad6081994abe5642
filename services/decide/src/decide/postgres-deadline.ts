// How long one decide request waits for Postgres, all lookups together (token on a cache miss,
// flag list when Redis has none, quota, stored properties). The pool's own timeouts bound each
// query (statement_timeout, the client's query_timeout a second later, the connect timeout for a
// new connection or a free pooled one), but a request can need several of them in a row and a
// Postgres that accepts connections and never answers costs the connect timeout each time; the
// deadline makes the whole request answer within one budget. What was not read by then is
// treated as failed: stored properties leave their flags out (errorsWhileComputingFlags), the
// quota fails open, and a token or flag list that cannot be read is a 503, as PostHog's flag
// service answers when its database is unavailable. The query itself goes on in the background
// until the pool's timeouts end it.

/** Used when the service is built without a budget (tests): decide's default statement timeout. */
export const DEFAULT_POSTGRES_BUDGET_MS = 1_000;

export class PostgresDeadlineError extends Error {
  override readonly name = 'PostgresDeadlineError';
  constructor(budgetMs: number) {
    super(`postgres did not answer within the request's ${budgetMs} ms budget`);
  }
}

export interface PostgresDeadline {
  /** `work`, or a PostgresDeadlineError once the request's budget is spent. */
  race<T>(work: Promise<T>): Promise<T>;
  /** Drops the timer; call when the request is done. */
  clear(): void;
}

/** One per request, started when the request starts. The timer exists only once something waits. */
export function createPostgresDeadline(budgetMs: number, now: () => number = Date.now): PostgresDeadline {
  const endsAt = now() + budgetMs;
  let timer: NodeJS.Timeout | undefined;
  let expired: Promise<never> | undefined;
  return {
    race(work) {
      if (!expired) {
        expired = new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(new PostgresDeadlineError(budgetMs)), Math.max(0, endsAt - now()));
        });
        // The request may be answered before the deadline: nobody is left to observe it then.
        expired.catch(() => undefined);
      }
      return Promise.race([work, expired]);
    },
    clear() {
      if (timer) clearTimeout(timer);
    },
  };
}
