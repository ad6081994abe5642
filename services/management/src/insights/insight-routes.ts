// The routes of saved insights (/api/projects/:id/insights/): PostHog's shapes, results through
// the query engine and its cache (insight-results.ts), soft delete with PATCH deleted.
import {
  arrayOf,
  booleanQuery,
  creatorSchema,
  dateTime,
  int,
  limitParam,
  offsetParam,
  paginated,
  projectItemParams,
  projectParams,
  queryBoolean,
  searchParam,
  shape,
  str,
  strOrNull,
} from '../api-schemas';
import { parsePage } from '../pagination/pagination';
import { resolveProject, resolveReadableProjectId } from '../projects/project-access';
import { abortOnClientGone, queryCallerFor } from '../query/query-caller';
import { r, personal, listAnswer, itemId, PROJECT } from '../route-kit';
import type { FastifyReply } from 'fastify';
import type { QueryCaller } from '../query/run-query';
import type { ManagementRouteDeps } from '../route-deps';
import { MAX_INT4 } from '../validate';
import {
  insightRefreshParam,
  resultAfterWrite,
  resultOf,
  resultsOf,
  type InsightRefresh,
} from './insight-results';
import { insightJson, type InsightWithRelations, type InsightWrite } from './insight-service';

const nullableText = (maxLength: number) => ({ type: ['string', 'null'], maxLength }) as const;

export const insightWriteSchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    name: nullableText(400),
    derived_name: nullableText(400),
    description: nullableText(4000),
    query: {
      type: ['object', 'null'],
      description: 'a query node, as POST /query/ takes it (checked the same way before it is saved)',
    },
    filters: {
      type: 'object',
      description: "PostHog's legacy filters: only {} (describe the insight with query)",
    },
    tags: { type: 'array', maxItems: 100, items: { type: 'string', maxLength: 255 } },
    favorited: { type: 'boolean' },
    saved: { type: 'boolean' },
    deleted: { type: 'boolean', description: 'true deletes the insight (soft: PostHog has no hard delete)' },
    dashboards: {
      type: 'array',
      maxItems: 100,
      items: { type: 'integer', minimum: 1, maximum: MAX_INT4 },
      description:
        'the ids of the dashboards it is on: a tile is added for each new one, removed for each one left out',
    },
  },
} as const;

const resultFields = {
  result: {},
  hasMore: { type: ['boolean', 'null'] },
  columns: {},
  types: {},
  last_refresh: { type: ['string', 'null'] },
  is_cached: { type: 'boolean' },
  query_status: {},
  cache_target_age: { type: 'null' },
  next_allowed_client_refresh: { type: 'null' },
  hogql: { type: 'null' },
};

export const insightSchema = shape(
  {
    id: int,
    short_id: str,
    name: strOrNull,
    derived_name: strOrNull,
    query: {},
    filters: { type: 'object' },
    order: { type: 'null' },
    deleted: { type: 'boolean' },
    dashboards: arrayOf(int),
    dashboard_tiles: arrayOf(shape({ id: int, dashboard_id: int, deleted: { type: 'boolean' } })),
    description: str,
    tags: arrayOf(str),
    favorited: { type: 'boolean' },
    saved: { type: 'boolean' },
    created_at: dateTime,
    created_by: creatorSchema,
    updated_at: dateTime,
    last_modified_at: dateTime,
    last_modified_by: creatorSchema,
    is_sample: { type: 'boolean' },
    effective_restriction_level: int,
    effective_privilege_level: int,
    user_access_level: str,
    timezone: str,
    ...resultFields,
  },
  { optional: Object.keys(resultFields) },
);

const insightListQuery = {
  type: 'object',
  properties: {
    limit: limitParam,
    offset: offsetParam,
    saved: booleanQuery,
    favorited: booleanQuery,
    search: {
      ...searchParam,
      description: 'every term in the name, derived name or description (case-insensitive)',
    },
    short_id: { type: 'string', maxLength: 20 },
    created_by: { type: 'integer', minimum: 1, maximum: MAX_INT4 },
    basic: { ...booleanQuery, description: 'true: without results' },
    refresh: insightRefreshParam,
  },
} as const;

const refreshQuery = { type: 'object', properties: { refresh: insightRefreshParam } } as const;

const LIST_RESULTS_MAX = 100;

/** The insight in PostHog's shape with its result, computed by `compute` (resultOf, or
 * resultAfterWrite after a save) for the caller whose query was checked before the write. */
async function answer(
  d: ManagementRouteDeps,
  caller: QueryCaller,
  insight: InsightWithRelations,
  refresh: unknown,
  reply: FastifyReply,
  compute: typeof resultOf,
) {
  return insightJson(
    insight,
    await compute(insight.query, {
      caller,
      queries: d.queries,
      refresh: refresh as InsightRefresh | undefined,
      signal: abortOnClientGone(reply),
    }),
  );
}

export const insightRoutes = [
  r({
    method: 'GET',
    url: `${PROJECT}/insights/`,
    summary: 'List saved insights, last modified first',
    description:
      'Results per ?refresh= (default: cached only, null when there is none), at most as many at once as ' +
      'one user may run (QUERY_MAX_PER_USER) under one QUERY_TIMEOUT_MS; an insight that could not be ' +
      'computed says why in its query_status. basic=true leaves results out.',
    compat: {
      posthog: 'differs',
      note: 'query-based insights only: legacy filters other than {} answer 400; the async refresh values compute before answering',
    },
    tag: 'insights',
    auth: personal('insight:read'),
    schema: {
      params: projectParams,
      querystring: insightListQuery,
      response: { 200: paginated(insightSchema) },
    },
    handler: async ({ params, query, auth, request, reply }, d) => {
      const teamId = await resolveReadableProjectId(d.prisma, auth, params.project_id);
      const page = parsePage(query);
      const { count, insights } = await d.insights.list(
        teamId,
        {
          saved: queryBoolean(query.saved),
          favorited: queryBoolean(query.favorited),
          search: query.search,
          short_id: query.short_id,
          created_by: query.created_by,
        },
        { ...page, limit: Math.min(page.limit, LIST_RESULTS_MAX) },
      );
      if (queryBoolean(query.basic))
        return listAnswer(request, d, page, {
          count,
          results: insights.map((i) => insightJson(i, undefined)),
        });
      const results = await resultsOf(
        insights.map((i) => i.query),
        {
          caller: await queryCallerFor(d.pool, auth.userId, teamId),
          queries: d.queries,
          refresh: query.refresh as InsightRefresh | undefined,
          signal: abortOnClientGone(reply),
          concurrency: d.queryConcurrencyPerUser,
          timeoutMs: d.queryTimeoutMs,
        },
      );
      return listAnswer(request, d, page, {
        count,
        results: insights.map((i, n) => insightJson(i, results[n])),
      });
    },
  }),
  r({
    method: 'POST',
    url: `${PROJECT}/insights/`,
    summary: 'Save an insight (its query is checked as /query/ checks it)',
    description:
      'The answer carries the result, computed unless ?refresh= says otherwise; a query cap or the deadline is its query_status.',
    compat: {
      posthog: 'differs',
      note: 'query-based insights only: legacy filters other than {} answer 400',
    },
    tag: 'insights',
    status: 201,
    auth: personal('insight:write'),
    schema: {
      params: projectParams,
      querystring: refreshQuery,
      body: insightWriteSchema,
      response: { 201: insightSchema },
    },
    handler: async ({ params, query, body, auth, reply }, d) => {
      const team = await resolveProject(d.prisma, auth, params.project_id);
      const caller = await queryCallerFor(d.pool, auth.userId, team.id);
      if (body.query) await d.queries.check(caller, body.query);
      const insight = await d.insights.create(team.id, auth.userId, body as InsightWrite);
      return answer(d, caller, insight, query.refresh, reply, resultAfterWrite);
    },
  }),
  r({
    method: 'GET',
    url: `${PROJECT}/insights/:id/`,
    summary: 'Retrieve an insight, with its result per ?refresh=',
    description:
      'Default: the cached result only (null when there is none). A query that fails is its error.',
    compat: { posthog: 'differs', note: 'the async refresh values compute before answering' },
    tag: 'insights',
    auth: personal('insight:read'),
    schema: { params: projectItemParams, querystring: refreshQuery, response: { 200: insightSchema } },
    handler: async ({ params, query, auth, reply }, d) => {
      const teamId = await resolveReadableProjectId(d.prisma, auth, params.project_id);
      const insight = await d.insights.load(teamId, itemId(params.id));
      return answer(
        d,
        await queryCallerFor(d.pool, auth.userId, teamId),
        insight,
        query.refresh,
        reply,
        resultOf,
      );
    },
  }),
  r({
    method: 'PATCH',
    url: `${PROJECT}/insights/:id/`,
    summary: 'Update an insight: its fields, the dashboards it is on, or deleted: true',
    compat: {
      posthog: 'differs',
      note: 'query-based insights only: legacy filters other than {} answer 400',
    },
    tag: 'insights',
    auth: personal('insight:write'),
    schema: {
      params: projectItemParams,
      querystring: refreshQuery,
      body: insightWriteSchema,
      response: { 200: insightSchema },
    },
    handler: async ({ params, query, body, auth, reply }, d) => {
      const team = await resolveProject(d.prisma, auth, params.project_id);
      const caller = await queryCallerFor(d.pool, auth.userId, team.id);
      if (body.query) await d.queries.check(caller, body.query);
      const insight = await d.insights.update(team.id, itemId(params.id), auth.userId, body as InsightWrite);
      if (insight.deleted) return insightJson(insight, undefined);
      return answer(d, caller, insight, query.refresh, reply, resultAfterWrite);
    },
  }),
];
