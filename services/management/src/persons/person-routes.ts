// The routes of persons and their deletion jobs.
import { ValidationError } from '@sett/http';
import { listQuery, paginated, projectParams, queryBoolean, uuidParam } from '../api-schemas';
import { parsePage } from '../pagination/pagination';
import {
  deletePerson,
  deletionJobUrl,
  listDeletions,
  listPersons,
  retrieveDeletion,
  retrievePerson,
} from './person-handlers';
import { deletePersons } from './person-deletion';
import {
  deleteEventsQuery,
  personBulkDeleteSchema,
  personDeletionSchema,
  personListQuery,
  personSchema,
} from './person-schemas';
import { resolveProject, resolveReadableProjectId } from '../projects/project-access';
import { r, personal, listAnswer, PROJECT } from '../route-kit';

export const personRoutes = [
  r({
    method: 'GET',
    url: `${PROJECT}/persons/`,
    summary: 'List persons, newest first',
    tag: 'persons',
    compat: {
      posthog: 'differs',
      note: 'search also matches the name property; no cohort filter, no CSV format',
    },
    auth: personal('person:read'),
    schema: {
      params: projectParams,
      querystring: personListQuery,
      response: { 200: paginated(personSchema) },
    },
    handler: async ({ params, query, auth, request }, d) => {
      const teamId = await resolveReadableProjectId(d.prisma, auth, params.project_id);
      const page = parsePage(query);
      return listAnswer(request, d, page, await listPersons(d.pool, teamId, page, query, d.regexes));
    },
  }),
  r({
    method: 'GET',
    url: `${PROJECT}/persons/:uuid/`,
    summary: 'Retrieve a person',
    tag: 'persons',
    auth: personal('person:read'),
    schema: {
      params: {
        type: 'object',
        required: ['project_id', 'uuid'],
        properties: { project_id: projectParams.properties.project_id, uuid: uuidParam },
      },
      response: { 200: personSchema },
    },
    handler: async ({ params, auth }, d) =>
      retrievePerson(d.pool, await resolveReadableProjectId(d.prisma, auth, params.project_id), params.uuid),
  }),
  r({
    method: 'DELETE',
    url: `${PROJECT}/persons/:uuid/`,
    summary: 'Delete a person and their distinct ids (Location: the deletion job)',
    description: 'With delete_events=true the job also deletes their events (docs/data-lifecycle.md).',
    tag: 'persons',
    status: 202,
    auth: personal('person:write'),
    schema: {
      params: {
        type: 'object',
        required: ['project_id', 'uuid'],
        properties: { project_id: projectParams.properties.project_id, uuid: uuidParam },
      },
      querystring: deleteEventsQuery,
    },
    handler: async ({ params, query, auth, reply }, d) => {
      const team = await resolveProject(d.prisma, auth, params.project_id);
      const result = await deletePerson(d.pool, team.id, params.uuid, {
        deleteEvents: queryBoolean(query.delete_events) ?? false,
        userId: auth.userId,
      });
      d.onJobQueued?.();
      reply.header('Location', deletionJobUrl(team.id, result));
    },
  }),
  r({
    method: 'POST',
    url: `${PROJECT}/persons/bulk_delete/`,
    summary:
      'Delete persons by uuid (ids) or by distinct id (distinct_ids), at most 1000 (Location: the job)',
    tag: 'persons',
    status: 202,
    auth: personal('person:write'),
    schema: { params: projectParams, querystring: deleteEventsQuery, body: personBulkDeleteSchema },
    handler: async ({ params, query, body, auth, reply }, d) => {
      const team = await resolveProject(d.prisma, auth, params.project_id);
      if (!body.ids && !body.distinct_ids)
        throw new ValidationError('You must pass either ids or distinct_ids.', 'ids', 'invalid_input');
      // PostHog takes delete_events in the body; the query string works too, as on DELETE.
      const deleteEvents = body.delete_events ?? queryBoolean(query.delete_events) ?? false;
      const result = await deletePersons(
        d.pool,
        team.id,
        { personUuids: body.ids?.map((id) => id.toLowerCase()), distinctIds: body.distinct_ids },
        { deleteEvents, userId: auth.userId },
      );
      if (result) {
        d.onJobQueued?.();
        reply.header('Location', deletionJobUrl(team.id, result));
      }
    },
  }),
  r({
    method: 'GET',
    url: `${PROJECT}/persons/deletions/`,
    summary: 'List person deletion jobs, newest first',
    tag: 'persons',
    auth: personal('person:read'),
    schema: {
      params: projectParams,
      querystring: listQuery,
      response: { 200: paginated(personDeletionSchema) },
    },
    handler: async ({ params, query, auth, request }, d) => {
      const teamId = await resolveReadableProjectId(d.prisma, auth, params.project_id);
      const page = parsePage(query);
      return listAnswer(request, d, page, await listDeletions(d.pool, teamId, page));
    },
  }),
  r({
    method: 'GET',
    url: `${PROJECT}/persons/deletions/:id/`,
    summary: 'Retrieve a person deletion job',
    tag: 'persons',
    auth: personal('person:read'),
    schema: {
      params: {
        type: 'object',
        required: ['project_id', 'id'],
        properties: {
          project_id: projectParams.properties.project_id,
          id: { type: 'string', pattern: '^[1-9][0-9]{0,17}$' },
        },
      },
      response: { 200: personDeletionSchema },
    },
    handler: async ({ params, auth }, d) =>
      retrieveDeletion(d.pool, await resolveReadableProjectId(d.prisma, auth, params.project_id), params.id),
  }),
];
