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
import type { QueryEngine } from '@sett/query';
import type { QuerySlots, SlotScope } from './query-slots';

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
      enum: ['blocking', 'force_blocking', true, false],
      description: 'Answers are computed on every request (there is no result cache yet): all values block',
    },
    client_query_id: { type: 'string', maxLength: 200 },
    name: { type: 'string', maxLength: 400 },
  },
} as const;

export interface QueryCaller {
  userId: number;
  teamId: number;
  timeZone: string;
  /** The project's test_account_filters (filterTestAccounts). */
  testAccountFilters?: unknown;
}

export interface QueryRunner {
  run(
    caller: QueryCaller,
    query: Record<string, unknown>,
    signal?: AbortSignal,
  ): Promise<Record<string, unknown>>;
}

export interface QueryRunnerDeps {
  engine: QueryEngine;
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
  const running = new prom.Gauge({
    name: 'management_queries_running',
    help: 'Queries running in this process',
    registers: [deps.registry],
  });

  return {
    async run(caller, query, signal) {
      // Shape, dates, filters, the answer's size and the regexes: all before a slot is taken.
      const prepared = await deps.engine.prepare(
        { id: caller.teamId, timeZone: caller.timeZone, testAccountFilters: caller.testAccountFilters },
        query,
      );
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
        return { ...answer, is_cached: false, last_refresh: now().toISOString() };
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
