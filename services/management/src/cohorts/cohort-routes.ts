// The routes of cohorts and the members of static ones.
import { isUpload } from '@sett/http';
import { listQuery, paginated, projectItemParams, projectParams, searchListQuery } from '../api-schemas';
import { readCohortUpload } from './cohort-upload';
import {
  cohortAddMembersSchema,
  cohortCreateSchema,
  cohortMembersAnswer,
  cohortRemoveMembersSchema,
  cohortSchema,
  cohortUpdateSchema,
  cohortUploadForm,
  validateCohortCreate,
  validateCohortUpdate,
  type CohortCreateBody,
  type CohortUpdateBody,
} from './cohort-schemas';
import { parsePage } from '../pagination/pagination';
import { resolveProject, resolveReadableProjectId } from '../projects/project-access';
import { r, personal, listAnswer, itemId, PROJECT } from '../route-kit';

export const cohortRoutes = [
  r({
    method: 'GET',
    url: `${PROJECT}/cohorts/`,
    summary: 'List cohorts, newest first',
    tag: 'cohorts',
    auth: personal('cohort:read'),
    schema: {
      params: projectParams,
      querystring: searchListQuery,
      response: { 200: paginated(cohortSchema) },
    },
    handler: async ({ params, query, auth, request }, d) => {
      const teamId = await resolveReadableProjectId(d.prisma, auth, params.project_id);
      const page = parsePage(query);
      return listAnswer(request, d, page, await d.cohorts.list(teamId, page, query.search));
    },
  }),
  r({
    method: 'POST',
    url: `${PROJECT}/cohorts/`,
    summary: 'Create a cohort (a static one may come with a CSV of distinct ids)',
    tag: 'cohorts',
    status: 201,
    body: 'upload',
    auth: personal('cohort:write'),
    schema: {
      params: projectParams,
      body: cohortCreateSchema,
      rawBody: cohortUploadForm,
      response: { 201: cohortSchema },
    },
    handler: async ({ params, body, auth, request }, d) => {
      const team = await resolveProject(d.prisma, auth, params.project_id);
      const input = isUpload(request)
        ? await readCohortUpload<CohortCreateBody>(request, validateCohortCreate)
        : { body: body as CohortCreateBody };
      return d.cohorts.create(team.id, auth.userId, input.body, input.members);
    },
  }),
  r({
    method: 'GET',
    url: `${PROJECT}/cohorts/:id/`,
    summary: 'Retrieve a cohort',
    tag: 'cohorts',
    auth: personal('cohort:read'),
    schema: { params: projectItemParams, response: { 200: cohortSchema } },
    handler: async ({ params, auth }, d) =>
      d.cohorts.retrieve(
        await resolveReadableProjectId(d.prisma, auth, params.project_id),
        itemId(params.id),
      ),
  }),
  r({
    method: 'PATCH',
    url: `${PROJECT}/cohorts/:id/`,
    summary: 'Update a cohort; {deleted: true} soft-deletes it; a CSV adds members to a static cohort',
    description:
      'Refused: loops between cohorts, event criteria in a cohort active flags use, deleting a cohort that ' +
      'active flags or other cohorts use.',
    tag: 'cohorts',
    body: 'upload',
    auth: personal('cohort:write'),
    schema: {
      params: projectItemParams,
      body: cohortUpdateSchema,
      rawBody: cohortUploadForm,
      response: { 200: cohortSchema },
    },
    handler: async ({ params, body, auth, request }, d) => {
      const team = await resolveProject(d.prisma, auth, params.project_id);
      const id = itemId(params.id);
      const input = isUpload(request)
        ? await readCohortUpload<CohortUpdateBody>(request, validateCohortUpdate)
        : { body: body as CohortUpdateBody };
      return d.cohorts.update(team.id, id, input.body, input.members);
    },
  }),
  r({
    method: 'DELETE',
    url: `${PROJECT}/cohorts/:id/`,
    summary: 'Soft-delete a cohort (PostHog answers 405 and deletes through PATCH; Sett does both)',
    tag: 'cohorts',
    compat: { posthog: 'differs', note: 'PostHog answers 405 and deletes through PATCH; Sett does both' },
    status: 204,
    auth: personal('cohort:write'),
    schema: { params: projectItemParams },
    handler: async ({ params, auth }, d) => {
      const team = await resolveProject(d.prisma, auth, params.project_id);
      await d.cohorts.remove(team.id, itemId(params.id));
    },
  }),
  r({
    method: 'PATCH',
    url: `${PROJECT}/cohorts/:id/add_persons_to_static_cohort/`,
    summary: 'Add members to a static cohort by distinct id (PostHog takes person uuids)',
    tag: 'cohorts',
    compat: { posthog: 'differs', note: 'takes distinct_ids, where PostHog takes person uuids' },
    auth: personal('cohort:write'),
    schema: { params: projectItemParams, body: cohortAddMembersSchema, response: { 200: cohortSchema } },
    handler: async ({ params, body, auth }, d) => {
      const team = await resolveProject(d.prisma, auth, params.project_id);
      return d.cohorts.addMembers(team.id, itemId(params.id), body.distinct_ids);
    },
  }),
  r({
    method: 'PATCH',
    url: `${PROJECT}/cohorts/:id/remove_person_from_static_cohort/`,
    summary: 'Remove members from a static cohort by distinct id (absent ones are ignored)',
    tag: 'cohorts',
    compat: {
      posthog: 'differs',
      note: 'takes distinct_id or distinct_ids, where PostHog takes a person uuid',
    },
    auth: personal('cohort:write'),
    schema: { params: projectItemParams, body: cohortRemoveMembersSchema, response: { 200: cohortSchema } },
    handler: async ({ params, body, auth }, d) => {
      const team = await resolveProject(d.prisma, auth, params.project_id);
      return d.cohorts.removeMembers(team.id, itemId(params.id), body.distinct_ids ?? [body.distinct_id!]);
    },
  }),
  r({
    method: 'GET',
    url: `${PROJECT}/cohorts/:id/members/`,
    summary: "A static cohort's distinct ids, in order",
    tag: 'cohorts',
    auth: personal('cohort:read'),
    schema: { params: projectItemParams, querystring: listQuery, response: { 200: cohortMembersAnswer } },
    handler: async ({ params, query, auth, request }, d) => {
      const teamId = await resolveReadableProjectId(d.prisma, auth, params.project_id);
      const page = parsePage(query);
      return listAnswer(request, d, page, await d.cohorts.members(teamId, itemId(params.id), page));
    },
  }),
];
