// Results of saved queries (insights, dashboard tiles) through the query runner and its cache,
// with PostHog's `?refresh=` of insights and dashboards: none or force_cache answers only what
// is cached (result null on a miss, never computed), blocking computes what is stale,
// force_blocking computes; the async values answer as blocking does (Sett computes while the
// request waits). Many at once (a list, a dashboard) run at most `concurrency` at a time (the
// per-user query cap), under one deadline for the request, and one that fails says so in its
// own query_status instead of failing the others.
import { SettError } from '@sett/http';
import type { QueryCaller, QueryRunner, Refresh } from '../query/run-query';

export const INSIGHT_REFRESH = [
  'blocking',
  'force_blocking',
  'force_cache',
  'lazy_async',
  'async',
  'async_except_on_cache_miss',
  'force_async',
  'true',
  'false',
] as const;
export type InsightRefresh = (typeof INSIGHT_REFRESH)[number];

export const insightRefreshParam = {
  type: 'string',
  enum: [...INSIGHT_REFRESH],
  description:
    'none or force_cache: the cached result only (null when there is none); blocking: computed when stale; ' +
    'force_blocking (true): computed; the async values answer as blocking',
} as const;

function runnerRefresh(refresh: InsightRefresh | undefined): Refresh {
  if (refresh === undefined || refresh === 'force_cache' || refresh === 'false') return 'force_cache';
  if (refresh === 'force_blocking' || refresh === 'true' || refresh === 'force_async')
    return 'force_blocking';
  return 'blocking';
}

/** What an insight carries of its query's answer. */
export interface InsightResult {
  result: unknown;
  hasMore: boolean | null;
  columns: unknown;
  types: unknown;
  last_refresh: string | null;
  is_cached: boolean;
  query_status: { error: boolean; error_message: string } | null;
  cache_target_age: null;
  next_allowed_client_refresh: null;
}

export const EMPTY_RESULT: InsightResult = {
  result: null,
  hasMore: null,
  columns: null,
  types: null,
  last_refresh: null,
  is_cached: false,
  query_status: null,
  cache_target_age: null,
  next_allowed_client_refresh: null,
};

function fromAnswer(answer: Record<string, unknown>): InsightResult {
  if (!('results' in answer) && !('result' in answer)) return { ...EMPTY_RESULT };
  return {
    ...EMPTY_RESULT,
    result: answer.results ?? answer.result ?? null,
    hasMore: typeof answer.hasMore === 'boolean' ? answer.hasMore : null,
    columns: answer.columns ?? null,
    types: answer.types ?? null,
    last_refresh: typeof answer.last_refresh === 'string' ? answer.last_refresh : null,
    is_cached: answer.is_cached === true,
  };
}

export interface ResultRequest {
  caller: QueryCaller;
  queries: QueryRunner;
  refresh?: InsightRefresh;
  signal?: AbortSignal;
}

/** One saved query's result. A query the engine refuses (saved before a rule changed) is its
 * query_status, so the insight stays readable and fixable; limits (429, 504) are thrown. */
export async function resultOf(query: unknown, req: ResultRequest): Promise<InsightResult> {
  if (query === null || typeof query !== 'object') return { ...EMPTY_RESULT };
  try {
    return fromAnswer(
      await req.queries.run(
        req.caller,
        query as Record<string, unknown>,
        req.signal,
        runnerRefresh(req.refresh),
      ),
    );
  } catch (error) {
    if (error instanceof SettError && error.status === 400) return failed(error.message);
    throw error;
  }
}

/** The result answered after a save: computed unless ?refresh= says otherwise (a new or changed
 * query is what the client wants to see, and it warms the cache dashboards read), and never an
 * error status for a write that has happened: a cap or the deadline is its query_status. */
export async function resultAfterWrite(query: unknown, req: ResultRequest): Promise<InsightResult> {
  try {
    return await resultOf(query, { ...req, refresh: req.refresh ?? 'blocking' });
  } catch (error) {
    if (error instanceof SettError) return failed(error.message);
    throw error;
  }
}

/** Many saved queries' results, `concurrency` at a time, until `timeoutMs`; each failure is
 * its own query_status (a 4xx's detail, a query cap's 429, the deadline). */
export async function resultsOf(
  queries: unknown[],
  req: ResultRequest & { concurrency: number; timeoutMs: number },
): Promise<InsightResult[]> {
  const out: InsightResult[] = queries.map(() => ({ ...EMPTY_RESULT }));
  const deadline = AbortSignal.timeout(req.timeoutMs);
  const signal = req.signal ? AbortSignal.any([req.signal, deadline]) : deadline;
  let next = 0;
  const worker = async () => {
    for (;;) {
      const i = next++;
      if (i >= queries.length) return;
      if (signal.aborted) {
        out[i] = failed('Not computed: the request ran out of time (QUERY_TIMEOUT_MS).');
        continue;
      }
      try {
        out[i] = await resultOf(queries[i], { ...req, signal });
      } catch (error) {
        if (!(error instanceof SettError) && !signal.aborted) throw error;
        out[i] = failed(
          error instanceof SettError ? error.message : 'Not computed: the request ran out of time.',
        );
      }
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(req.concurrency, queries.length)) }, worker));
  return out;
}

function failed(message: string): InsightResult {
  return { ...EMPTY_RESULT, query_status: { error: true, error_message: message } };
}
