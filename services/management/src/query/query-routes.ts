// The route of /query/: PostHog's query kinds through the query engine.
import { projectParams } from '../api-schemas';
import { queryRequestSchema } from './run-query';
import { abortOnClientGone, queryCallerFor } from './query-caller';
import { resolveReadableProjectId } from '../projects/project-access';
import { r, personal, PROJECT } from '../route-kit';

export const queryRoutes = [
  r({
    method: 'POST',
    url: `${PROJECT}/query/`,
    summary:
      "Run a query (TrendsQuery, FunnelsQuery, RetentionQuery, EventsQuery, HogQLQuery) in PostHog's shapes",
    description:
      'Served kinds: TrendsQuery (EventsNode series; math total, dau, weekly_active, monthly_active, unique_session, ' +
      'unique_group and property aggregates; event, person and group filters and breakdowns; formula; compare), ' +
      'FunnelsQuery (ordered, strict or unordered steps, window, exclusions, breakdown, steps or trends view), ' +
      'RetentionQuery (first time or recurring, Hour to Month, person breakdown), EventsQuery (select, where and orderBy in HogQL) ' +
      'and HogQLQuery (a documented subset of HogQL over events, persons and groups, docs/hogql.md), ' +
      'also inside InsightVizNode, DataVisualizationNode and DataTableNode. Any other kind or field is a 400 naming it. ' +
      'Answers are cached in Redis until a batch is ingested for the project (refresh). Limits (docs/query.md): ' +
      'an answer holds at most 50,000 numbers (400 naming the field to narrow); queries at once are capped per ' +
      'user, per project and in all over every replica (429 with Retry-After); one deadline, QUERY_TIMEOUT_MS, ' +
      'covers the request (504 query_timeout).',
    tag: 'query',
    compat: {
      posthog: 'differs',
      note: 'TrendsQuery, FunnelsQuery, RetentionQuery, EventsQuery, HogQLQuery (a subset of HogQL on Postgres, docs/hogql.md); no actions, cohorts in filters or async query status',
    },
    auth: personal('query:read'),
    // PostHog's query models forbid fields they do not know: so does Sett.
    unknownBodyFields: 'refuse',
    schema: { params: projectParams, body: queryRequestSchema, response: { 200: { type: 'object' } } },
    handler: async ({ params, body, auth, reply }, d) => {
      const teamId = await resolveReadableProjectId(d.prisma, auth, params.project_id);
      const caller = await queryCallerFor(d.pool, auth.userId, teamId);
      // A client that leaves before the answer stops its query.
      return d.queries.run(
        caller,
        body.query as Record<string, unknown>,
        abortOnClientGone(reply),
        body.refresh,
      );
    },
  }),
];
