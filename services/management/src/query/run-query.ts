// POST /api/projects/:id/query/: PostHog's query endpoint. The body is `{query: {kind, ...},
// refresh?, client_query_id?, name?}`. The query engine (@sett/query) checks the node against
// its kind's closed schema (a field Sett does not serve is a 400 naming it, an unsupported kind
// a 400 with `attr: "query.kind"` listing the kinds served) and runs it; this route validates,
// limits and calls it. docs/query.md says what each kind costs.
//
// What one request may cost others (docs/query.md, "Limits"), in the order it is checked:
// 1. the query's shape: dates, filters and the answer's size (the cost model), before anything
//    runs (400 naming the field to narrow);
// 2. its regexes, settled within a per-request budget, large ones off the event loop (1 and 2
//    are the engine's prepare step);
// 3. a slot: at most QUERY_MAX_CONCURRENT queries at once in all, QUERY_MAX_PER_USER of one
//    user, QUERY_MAX_PER_PROJECT of one project, over every replica (Redis; 429 past them);
// 4. one connection of the query pool, one read-only transaction, and one deadline for the
//    whole request (QUERY_TIMEOUT_MS: 504, every statement it started cancelled).
import { prom, RateLimitedError } from '@sett/http';
import { notServed } from '@sett/schemas';
import type { QueryEngine } from '@sett/query';
import type { QuerySlots, SlotScope } from './query-slots';
import type { ResultCache } from './result-cache';

export const queryRequestSchema = {
  type: 'object',
  required: ['query'],
  additionalProperties: false,
  properties: {
    query: {
      type: 'object',
      required: ['kind'],
      properties: { kind: { type: 'string', maxLength: 100 } },
      description:
        "A query node (PostHog's schema): TrendsQuery, or one wrapped in InsightVizNode, DataVisualizationNode or DataTableNode",
    },
    refresh: {
      enum: [
        'blocking',
        'force_blocking',
        'force_cache',
        'async',
        'async_except_on_cache_miss',
        'force_async',
        'lazy_async',
        true,
        false,
      ],
      description:
        'blocking (default, false): the cached answer while no batch was ingested for the project since it was computed, else computed now. force_blocking (true): computed now. force_cache: the cached answer however old, or the cache-miss answer; never computes. The async values answer as blocking does (the answer comes with the response, query_status null).',
    },
    client_query_id: { type: 'string', maxLength: 200 },
    name: { type: 'string', maxLength: 400 },
    async: {
      type: 'boolean',
      description: "PostHog's older spelling of refresh: 'async'; answered as blocking.",
    },
    filters_override: notServed('dashboard filter overrides would change the answer'),
    variables_override: notServed('HogQL variables are not served'),
  },
} as const;

export interface QueryCaller {
  userId: number;
  teamId: number;
  timeZone: string;
  /** The project's test_account_filters (filterTestAccounts). */
  testAccountFilters?: unknown;
}

export type Refresh = (typeof queryRequestSchema.properties.refresh.enum)[number];

export interface QueryRunner {
  /** What run() checks before it runs (shape, kind, dates, cost, regexes): a 400 naming the
   * field, or nothing (saving an insight). */
  check(caller: QueryCaller, query: Record<string, unknown>): Promise<void>;
  run(
    caller: QueryCaller,
    query: Record<string, unknown>,
    signal?: AbortSignal,
    refresh?: Refresh,
  ): Promise<Record<string, unknown>>;
}

export interface QueryRunnerDeps {
  engine: QueryEngine;
  cache?: ResultCache;
  slots: QuerySlots;
  /** QUERY_TIMEOUT_MS: the whole request's deadline. */
  timeoutMs: number;
  registry: prom.Registry;
  now?: () => Date;
}

export function createQueryRunner(deps: QueryRunnerDeps): QueryRunner {
  const now = deps.now ?? (() => new Date());
  const refused = new prom.Counter({
    name: 'management_query_refused_total',
    help: 'Queries refused before running: by the concurrency cap that was full (global, user, project)',
    labelNames: ['cap'],
    registers: [deps.registry],
  });
  for (const cap of ['global', 'user', 'project'] as SlotScope[]) refused.inc({ cap }, 0);
  const seconds = new prom.Histogram({
    name: 'management_query_duration_seconds',
    help: 'Time from taking a query slot to the answer, by kind and outcome (ok, timeout, error)',
    labelNames: ['kind', 'outcome'],
    buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
    registers: [deps.registry],
  });
  const cacheHits = new prom.Counter({
    name: 'management_query_cache_hits_total',
    help: 'Query answers served from the result cache, by kind',
    labelNames: ['kind'],
    registers: [deps.registry],
  });
  const running = new prom.Gauge({
    name: 'management_queries_running',
    help: 'Queries running in this process',
    registers: [deps.registry],
  });

  return {
    async check(caller, query) {
      await deps.engine.prepare(
        { id: caller.teamId, timeZone: caller.timeZone, testAccountFilters: caller.testAccountFilters },
        query,
      );
    },
    async run(caller, query, signal, refresh = 'blocking') {
      // Shape, dates, filters, the answer's size and the regexes: all before a slot is taken.
      const prepared = await deps.engine.prepare(
        { id: caller.teamId, timeZone: caller.timeZone, testAccountFilters: caller.testAccountFilters },
        query,
      );
      const at = now();
      const cacheKey = deps.cache?.key(
        caller.teamId,
        {
          timeZone: caller.timeZone,
          query: prepared.node,
          testAccountFilters: prepared.node.filterTestAccounts === true ? caller.testAccountFilters : null,
        },
        at,
      );
      const envelope = (answer: Record<string, unknown>, cached: boolean, lastRefresh: string) => ({
        ...answer,
        is_cached: cached,
        last_refresh: lastRefresh,
        cache_key: cacheKey ?? null,
        query_status: null,
      });
      const force = refresh === 'force_blocking' || refresh === true || refresh === 'force_async';
      if (deps.cache && cacheKey && !force) {
        const hit = await deps.cache.get(caller.teamId, cacheKey);
        if (hit && (hit.fresh || refresh === 'force_cache')) {
          cacheHits.inc({ kind: prepared.kind });
          return envelope(hit.answer, true, hit.lastRefresh);
        }
      }
      // PostHog's cache-miss answer: force_cache never computes.
      if (refresh === 'force_cache') return { cache_key: cacheKey ?? null, query_status: null };
      // The version the answer is computed at: a batch ingested meanwhile makes it stale at once.
      const version = deps.cache ? await deps.cache.version(caller.teamId) : undefined;
      const lease = await deps.slots.acquire({ userId: caller.userId, teamId: caller.teamId });
      if (!lease.ok) {
        refused.inc({ cap: lease.refusedBy });
        throw new RateLimitedError(1);
      }
      running.inc();
      const started = process.hrtime.bigint();
      let outcome = 'error';
      try {
        const answer = await prepared.run({ deadline: Date.now() + deps.timeoutMs, signal });
        outcome = 'ok';
        const lastRefresh = now().toISOString();
        if (deps.cache && cacheKey && version !== undefined)
          await deps.cache.set(caller.teamId, cacheKey, version, answer, lastRefresh);
        return envelope(answer, false, lastRefresh);
      } catch (err) {
        if ((err as { status?: number }).status === 504) outcome = 'timeout';
        throw err;
      } finally {
        running.dec();
        seconds.observe({ kind: prepared.kind, outcome }, Number(process.hrtime.bigint() - started) / 1e9);
        await lease.release();
      }
    },
  };
}
