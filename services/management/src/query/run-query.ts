// POST /api/projects/:id/query/: PostHog's query endpoint. The body is `{query: {kind, ...},
// refresh?, client_query_id?, name?}`; each supported kind has its own closed schema, so a field
// Sett does not serve is a 400 naming it (`query.compareFilter`), and an unsupported kind is a
// 400 with `attr: "query.kind"` listing the kinds served. docs/query.md says what each costs.
import type { Pool } from 'pg';
import { RateLimitedError, ValidationError } from '@sett/http';
import { compile, describeAjvError } from '@sett/schemas';
import { runTrends, trendsQuerySchema, type TrendsQuery } from './trends';

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

/** At most this many queries of one project run at once; more answer 429 (one dashboard must
 * not take every Postgres connection management has). */
export const MAX_QUERIES_PER_TEAM = 4;

export interface QueryRunner {
  run(teamId: number, timeZone: string, query: Record<string, unknown>): Promise<Record<string, unknown>>;
}

export function createQueryRunner(pool: Pool, now: () => Date = () => new Date()): QueryRunner {
  const running = new Map<number, number>();
  return {
    async run(teamId, timeZone, query) {
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
      const inFlight = running.get(teamId) ?? 0;
      if (inFlight >= MAX_QUERIES_PER_TEAM) throw new RateLimitedError(1);
      running.set(teamId, inFlight + 1);
      const started = process.hrtime.bigint();
      try {
        const { results, resolved_date_range } = await runTrends(pool, teamId, timeZone, query, now());
        const ms = Number(process.hrtime.bigint() - started) / 1e6;
        return {
          results,
          hasMore: false,
          is_cached: false,
          last_refresh: now().toISOString(),
          timezone: timeZone,
          resolved_date_range,
          timings: [{ k: 'trends', t: ms / 1000 }],
        };
      } finally {
        const left = (running.get(teamId) ?? 1) - 1;
        if (left === 0) running.delete(teamId);
        else running.set(teamId, left);
      }
    },
  };
}
