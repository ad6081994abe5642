// The routes of dashboards (/api/projects/:id/dashboards/): PostHog's shapes; a dashboard read
// with its tiles computes their insights concurrently, each under the query limits.
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
import type { AuthContext } from '../auth/auth-context';
import type { ManagementRouteDeps } from '../route-deps';
import { MAX_INT4 } from '../validate';
import { insightRefreshParam, resultsOf, type InsightRefresh } from '../insights/insight-results';
import { insightSchema } from '../insights/insight-routes';
import { dashboardJson, type DashboardWrite, type TileRow } from './dashboard-service';

const tileWrite = {
  type: 'object',
  additionalProperties: false,
  properties: {
    id: { type: 'integer', minimum: 1, maximum: MAX_INT4, description: 'an existing tile to change' },
    insight: {
      anyOf: [
        { type: 'integer', minimum: 1, maximum: MAX_INT4 },
        {
          type: 'object',
          required: ['id'],
          properties: { id: { type: 'integer', minimum: 1, maximum: MAX_INT4 } },
        },
        { type: 'null' },
      ],
      description: 'a new tile: the insight (or its id) to show',
    },
    text: {
      anyOf: [
        { type: 'object', required: ['body'], properties: { body: { type: 'string', maxLength: 4000 } } },
        { type: 'null' },
      ],
      description: 'a new text tile, or a text tile changed',
    },
    layouts: { type: 'object' },
    color: { type: ['string', 'null'], maxLength: 40 },
    deleted: { type: 'boolean', description: 'true removes the tile' },
    // Read-only fields of a tile, sent back by clients that PATCH what they read.
    is_cached: {},
    last_refresh: {},
    error: {},
  },
} as const;

const dashboardWriteSchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    name: { type: ['string', 'null'], maxLength: 400 },
    description: { type: ['string', 'null'], maxLength: 4000 },
    pinned: { type: 'boolean' },
    tags: { type: 'array', maxItems: 100, items: { type: 'string', maxLength: 255 } },
    filters: { type: 'object', description: 'only {}: filters over every tile are not served' },
    variables: { type: 'object', description: 'only {}: HogQL variables are not served' },
    use_template: { type: 'string', maxLength: 400, description: 'not served (a 400 when set)' },
    deleted: { type: 'boolean', description: 'true deletes the dashboard (soft)' },
    delete_insights: {
      type: 'boolean',
      description: 'with deleted: also the insights on no other dashboard',
    },
    tiles: { type: 'array', maxItems: 100, items: tileWrite },
  },
} as const;

const basicFields = {
  id: int,
  name: strOrNull,
  description: str,
  pinned: { type: 'boolean' },
  created_at: dateTime,
  created_by: creatorSchema,
  last_accessed_at: { type: 'null' },
  is_shared: { type: 'boolean' },
  deleted: { type: 'boolean' },
  creation_mode: str,
  tags: arrayOf(str),
  restriction_level: int,
  effective_restriction_level: int,
  effective_privilege_level: int,
  user_access_level: str,
};

const dashboardBasicSchema = shape(basicFields);

const tileSchema = shape({
  id: int,
  insight: { anyOf: [insightSchema, { type: 'null' }] },
  text: {
    anyOf: [shape({ id: int, body: str, team: int, last_modified_at: dateTime }), { type: 'null' }],
  },
  order: int,
  layouts: { type: 'object' },
  color: strOrNull,
  is_cached: { type: 'boolean' },
  last_refresh: strOrNull,
  error: { anyOf: [shape({ type: str, message: str }), { type: 'null' }] },
});

const dashboardSchema = shape({
  ...basicFields,
  filters: { type: 'object' },
  variables: { type: 'object' },
  breakdown_colors: { type: 'array' },
  data_color_theme_id: { type: 'null' },
  tiles: arrayOf(tileSchema),
});

const refreshQuery = { type: 'object', properties: { refresh: insightRefreshParam } } as const;

/** The dashboard with its tiles' results per ?refresh=, computed concurrently. */
async function withResults(
  d: ManagementRouteDeps,
  auth: AuthContext,
  teamId: number,
  loaded: Awaited<ReturnType<ManagementRouteDeps['dashboards']['load']>>,
  refresh: InsightRefresh | undefined,
  signal: AbortSignal,
) {
  const insightTiles = loaded.tiles.filter(
    (t): t is TileRow & { insight: NonNullable<TileRow['insight']> } => t.insight !== null,
  );
  const results = await resultsOf(
    insightTiles.map((t) => t.insight.query),
    {
      caller: await queryCallerFor(d.pool, auth.userId, teamId),
      queries: d.queries,
      refresh,
      signal,
      concurrency: d.queryConcurrencyPerUser,
      timeoutMs: d.queryTimeoutMs,
    },
  );
  const byTile = new Map(insightTiles.map((t, i) => [t.id, results[i]]));
  return dashboardJson(
    loaded.dashboard,
    loaded.tiles,
    loaded.tiles.map((t) => byTile.get(t.id)),
  );
}

export const dashboardRoutes = [
  r({
    method: 'GET',
    url: `${PROJECT}/dashboards/`,
    summary: 'List dashboards, pinned first, then by name',
    compat: { posthog: 'same' },
    tag: 'dashboards',
    auth: personal('dashboard:read'),
    schema: {
      params: projectParams,
      querystring: {
        type: 'object',
        properties: { limit: limitParam, offset: offsetParam, search: searchParam, pinned: booleanQuery },
      },
      response: { 200: paginated(dashboardBasicSchema) },
    },
    handler: async ({ params, query, auth, request }, d) => {
      const teamId = await resolveReadableProjectId(d.prisma, auth, params.project_id);
      const page = parsePage(query);
      return listAnswer(
        request,
        d,
        page,
        await d.dashboards.list(teamId, { search: query.search, pinned: queryBoolean(query.pinned) }, page),
      );
    },
  }),
  r({
    method: 'POST',
    url: `${PROJECT}/dashboards/`,
    summary: 'Create a dashboard (tiles may be given: texts, or insights by id)',
    compat: {
      posthog: 'differs',
      note: 'no templates (use_template answers 400); filters and variables only {}',
    },
    tag: 'dashboards',
    status: 201,
    auth: personal('dashboard:write'),
    schema: { params: projectParams, body: dashboardWriteSchema, response: { 201: dashboardSchema } },
    handler: async ({ params, body, auth, reply }, d) => {
      const team = await resolveProject(d.prisma, auth, params.project_id);
      const loaded = await d.dashboards.create(team.id, auth.userId, body as DashboardWrite);
      return withResults(d, auth, team.id, loaded, undefined, abortOnClientGone(reply));
    },
  }),
  r({
    method: 'GET',
    url: `${PROJECT}/dashboards/:id/`,
    summary: 'Retrieve a dashboard with its tiles, each with its insight and result per ?refresh=',
    description:
      "Default: cached results only (null when there is none), as PostHog's. Tiles are computed concurrently, " +
      'at most QUERY_MAX_PER_USER at once, under one QUERY_TIMEOUT_MS; a tile that could not be computed says why ' +
      'in its error.',
    compat: {
      posthog: 'differs',
      note: 'no filters or variables over tiles; tiles are computed before answering (no streaming)',
    },
    tag: 'dashboards',
    auth: personal('dashboard:read'),
    schema: { params: projectItemParams, querystring: refreshQuery, response: { 200: dashboardSchema } },
    handler: async ({ params, query, auth, reply }, d) => {
      const teamId = await resolveReadableProjectId(d.prisma, auth, params.project_id);
      const loaded = await d.dashboards.load(teamId, itemId(params.id));
      return withResults(
        d,
        auth,
        teamId,
        loaded,
        query.refresh as InsightRefresh | undefined,
        abortOnClientGone(reply),
      );
    },
  }),
  r({
    method: 'PATCH',
    url: `${PROJECT}/dashboards/:id/`,
    summary:
      'Update a dashboard: its fields, its tiles (layouts, colors, texts, new tiles, deleted), or deleted: true',
    compat: { posthog: 'differs', note: 'filters and variables only {}; no move_tile' },
    tag: 'dashboards',
    auth: personal('dashboard:write'),
    schema: {
      params: projectItemParams,
      querystring: refreshQuery,
      body: dashboardWriteSchema,
      response: { 200: dashboardSchema },
    },
    handler: async ({ params, query, body, auth, reply }, d) => {
      const team = await resolveProject(d.prisma, auth, params.project_id);
      const loaded = await d.dashboards.update(team.id, itemId(params.id), body as DashboardWrite);
      return withResults(
        d,
        auth,
        team.id,
        loaded,
        query.refresh as InsightRefresh | undefined,
        abortOnClientGone(reply),
      );
    },
  }),
];
