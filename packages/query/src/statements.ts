// How a query request reaches Postgres: one connection of management's query pool (never the
// pool that serves key checks and /_ready), one read-only transaction, and one deadline for the
// whole request. Before each statement the transaction's statement_timeout is set to what is
// left of the deadline, so Postgres itself cancels the statement running when it passes, and no
// later one starts: a request with many statements cannot add up past it. A client that goes
// away cancels the running statement too (pg_cancel_backend from the other pool).
//
// The regular expressions of a request's filters are tried on Postgres' own engine first, one
// statement each: a pattern RE2 accepts that Postgres cannot run (`\pL`, `a{1000}`, `(?P<n>)`)
// is a 400 naming its filter, before any scan.
import type pg from 'pg';
import { TimeoutError, ValidationError } from '@sett/http';

/** What a query kind's planner runs its SQL through. */
export interface Statements {
  query<R extends object>(sql: string, params: unknown[]): Promise<{ rows: R[] }>;
}

export interface RunOptions {
  /** Epoch ms after which no statement runs and the running one is cancelled. */
  deadline: number;
  /** Patterns (with the filter each is from) to try on Postgres' engine before the work. */
  regexes?: ReadonlyArray<{ pattern: string; attr: string; key: string }>;
  /** Aborted when the client went away: the running statement is cancelled. */
  signal?: AbortSignal;
}

export interface StatementRunner {
  run<T>(work: (db: Statements) => Promise<T>, opts: RunOptions): Promise<T>;
}

const QUERY_CANCELED = '57014';
const INVALID_REGULAR_EXPRESSION = '2201B';

const codeOf = (err: unknown) => (err as { code?: unknown } | null)?.code;

export function createStatementRunner(queryPool: pg.Pool, controlPool: pg.Pool): StatementRunner {
  return {
    async run(work, opts) {
      if (opts.signal?.aborted) throw new TimeoutError('The client went away before the query ran.');
      const client = await queryPool.connect();
      const pid = (client as unknown as { processID?: number }).processID;
      let broken = false;
      const cancel = () => {
        if (pid !== undefined)
          controlPool.query('SELECT pg_cancel_backend($1)', [pid]).catch(() => undefined);
      };
      opts.signal?.addEventListener('abort', cancel, { once: true });
      const db: Statements = {
        async query<R extends object>(sql: string, params: unknown[]) {
          if (opts.signal?.aborted) throw new TimeoutError('The client went away; the query stopped.');
          const left = Math.floor(opts.deadline - Date.now());
          if (left < 1) throw new TimeoutError();
          // An integer in the statement text: SET takes no parameters.
          await client.query(`SET LOCAL statement_timeout = ${left}`);
          try {
            return await client.query<R>(sql, params);
          } catch (err) {
            if (codeOf(err) === QUERY_CANCELED) throw new TimeoutError();
            throw err;
          }
        },
      };
      try {
        await client.query('BEGIN READ ONLY');
        for (const r of opts.regexes ?? []) {
          try {
            await db.query("SELECT '' ~ $1::text AS ok", [r.pattern]);
          } catch (err) {
            if (codeOf(err) !== INVALID_REGULAR_EXPRESSION) throw err;
            throw new ValidationError(
              `${r.attr}: the regular expression on ${r.key} is valid RE2 but the database cannot run it (${(err as Error).message}); write it without Unicode classes, counted repeats over 255 or named groups.`,
              r.attr,
            );
          }
        }
        const result = await work(db);
        await client.query('COMMIT');
        return result;
      } catch (err) {
        await client.query('ROLLBACK').catch(() => {
          broken = true;
        });
        throw err;
      } finally {
        opts.signal?.removeEventListener('abort', cancel);
        client.release(broken);
      }
    },
  };
}
