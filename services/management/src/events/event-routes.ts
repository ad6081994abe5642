// The routes of the events list.
import { projectParams } from '../api-schemas';
import { listEventPage } from './event-handlers';
import { eventListQuery, eventPageSchema } from './event-schemas';
import { pageRequestInfo, parsePage } from '../pagination/pagination';
import { resolveReadableProjectId } from '../projects/project-access';
import { r, personal, PROJECT } from '../route-kit';

export const eventRoutes = [
  r({
    method: 'GET',
    url: `${PROJECT}/events/`,
    summary: 'List events, newest first (cursor pagination: follow next)',
    tag: 'events',
    compat: { posthog: 'differs', note: 'no select/where (HogQL); person_id takes the person uuid only' },
    auth: personal('query:read'),
    schema: { params: projectParams, querystring: eventListQuery, response: { 200: eventPageSchema } },
    handler: async ({ params, query, auth, request }, d) => {
      const teamId = await resolveReadableProjectId(d.prisma, auth, params.project_id);
      const { limit } = parsePage({ limit: query.limit });
      return listEventPage(d.pool, teamId, query, pageRequestInfo(request, d.publicUrl), limit, d.regexes);
    },
  }),
];
