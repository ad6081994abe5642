// POST /api/projects/:id/query/: PostHog's query endpoint. The body is `{query: {kind, ...},
// refresh?, client_query_id?, name?}`; each supported kind has its own closed schema, so a field
// Sett does not serve is a 400 naming it (`query.compareFilter`), and an unsupported kind is a
// 400 with `attr: "query.kind"` listing the kinds served. docs/query.md says what each costs.
//
// What one request may cost others (docs/query.md, "Limits"), in the order it is checked:
// 1. the query's shape: dates, filters and the answer's size (the cost model), before anything
//    runs (400 naming the field to narrow);
// 2. its regexes, settled within a per-request budget, large ones off the event loop;
// 3. a slot: at most QUERY_MAX_CONCURRENT queries at once in all, QUERY_MAX_PER_USER of one
//    user, QUERY_MAX_PER_PROJECT of one project, over every replica (Redis; 429 past them);
// 4. one connection of the query pool, one read-only transaction, and one deadline for the
//    whole request (QUERY_TIMEOUT_MS: 504, every statement it started cancelled).
import { prom, RateLimitedError, ValidationError } from '@sett/http';
import type { RegexChecker } from '@sett/flags';
import { compile, describeAjvError } from '@sett/schemas';
import { checkFilterRegexes, filterRegexes } from '../filters/property-filter-sql';
import type { QuerySlots, SlotScope } from './query-slots';
import type { StatementRunner } from './statements';
import { planTrends, runTrends, trendsQuerySchema, type TrendsQuery } from './trends';

export const SUPPORTED_KINDS = ['TrendsQuery'] as const;

export const queryRequestSchema = {
  type: 'object',
  required: ['query'],
  additionalProperties: false,
  properties: {
    query: {
      type: 'object',
      required: ['kind'],
      properties: { kind: { type: 'string', maxLength: 100 } },
      description: `A query node: kind ${SUPPORTED_KINDS.join(', ')} (PostHog's schema)`,
    },
    refresh: {
      enum: ['blocking', 'force_blocking', true, false],
      description: 'Answers are computed on every request (there is no result cache yet): all values block',
    },
    client_query_id: { type: 'string', maxLength: 200 },
    name: { type: 'string', maxLength: 400 },
  },
} as const;

const validateTrends = compile<TrendsQuery>(trendsQuerySchema);

export interface QueryCaller {
  userId: number;
  teamId: number;
  timeZone: string;
}

export interface QueryRunner {
  run(
    caller: QueryCaller,
    query: Record<string, unknown>,
    signal?: AbortSignal,
  ): Promise<Record<string, unknown>>;
}

export interface QueryRunnerDeps {
  statements: StatementRunner;
  slots: QuerySlots;
  regexes: RegexChecker;
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
      if (query.kind !== 'TrendsQuery')
        throw new ValidationError(
          `Query kind ${JSON.stringify(query.kind)} is not supported. Supported kinds: ${SUPPORTED_KINDS.join(', ')}.`,
          'query.kind',
          'unsupported_query_kind',
        );
      if (!validateTrends(query)) {
        const problem = describeAjvError(validateTrends.errors);
        throw new ValidationError(
          problem.attr ? `query.${problem.detail}` : problem.detail,
          problem.attr ? `query.${problem.attr}` : 'query',
        );
      }
      const plan = planTrends(query, caller.timeZone, now());
      await checkFilterRegexes(plan.groups, deps.regexes);

      const lease = await deps.slots.acquire({ userId: caller.userId, teamId: caller.teamId });
      if (!lease.ok) {
        refused.inc({ cap: lease.refusedBy });
        throw new RateLimitedError(1);
      }
      running.inc();
      const started = process.hrtime.bigint();
      let outcome = 'error';
      try {
        const byPattern = new Map<string, { pattern: string; attr: string; key: string }>();
        for (const l of filterRegexes(plan.groups)) {
          const pattern = typeof l.value === 'string' ? l.value : JSON.stringify(l.value);
          if (!byPattern.has(pattern)) byPattern.set(pattern, { pattern, attr: l.attr, key: l.key });
        }
        const regexes = [...byPattern.values()];
        const answer = await deps.statements.run(
          (db) => runTrends(db, caller.teamId, caller.timeZone, plan, now()),
          { deadline: Date.now() + deps.timeoutMs, regexes, signal },
        );
        outcome = 'ok';
        const ms = Number(process.hrtime.bigint() - started) / 1e6;
        return {
          results: answer.results,
          hasMore: answer.hasMore,
          is_cached: false,
          last_refresh: now().toISOString(),
          timezone: caller.timeZone,
          resolved_date_range: answer.resolved_date_range,
          timings: [{ k: 'trends', t: ms / 1000 }],
        };
      } catch (err) {
        if ((err as { status?: number }).status === 504) outcome = 'timeout';
        throw err;
      } finally {
        running.dec();
        seconds.observe({ kind: 'TrendsQuery', outcome }, Number(process.hrtime.bigint() - started) / 1e9);
        await lease.release();
      }
    },
  };
}
