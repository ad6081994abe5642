// The routes of early access features.
import { paginated, projectParams, searchListQuery } from '../api-schemas';
import {
  earlyAccessFeatureCreateSchema,
  earlyAccessFeatureSchema,
  earlyAccessFeatureUpdateSchema,
} from './early-access-feature-schemas';
import { parsePage } from '../pagination/pagination';
import { resolveProject, resolveReadableProjectId } from '../projects/project-access';
import { r, personal, listAnswer, featureParams, PROJECT } from '../route-kit';

export const earlyAccessFeatureRoutes = [
  r({
    method: 'GET',
    url: `${PROJECT}/early_access_feature/`,
    summary: 'List early access features, newest first',
    tag: 'early_access_features',
    auth: personal('early_access_feature:read'),
    schema: {
      params: projectParams,
      querystring: searchListQuery,
      response: { 200: paginated(earlyAccessFeatureSchema) },
    },
    handler: async ({ params, query, auth, request }, d) => {
      const teamId = await resolveReadableProjectId(d.prisma, auth, params.project_id);
      const page = parsePage(query);
      return listAnswer(request, d, page, await d.features.list(teamId, page, query.search));
    },
  }),
  r({
    method: 'POST',
    url: `${PROJECT}/early_access_feature/`,
    summary: 'Create an early access feature (with its flag, unless feature_flag_id names one)',
    tag: 'early_access_features',
    status: 201,
    auth: personal('early_access_feature:write'),
    schema: {
      params: projectParams,
      body: earlyAccessFeatureCreateSchema,
      response: { 201: earlyAccessFeatureSchema },
    },
    handler: async ({ params, body, auth }, d) => {
      const team = await resolveProject(d.prisma, auth, params.project_id);
      return d.features.create(team.id, auth.userId, body);
    },
  }),
  r({
    method: 'GET',
    url: `${PROJECT}/early_access_feature/:id/`,
    summary: 'Retrieve an early access feature',
    tag: 'early_access_features',
    auth: personal('early_access_feature:read'),
    schema: { params: featureParams, response: { 200: earlyAccessFeatureSchema } },
    handler: async ({ params, auth }, d) =>
      d.features.retrieve(await resolveReadableProjectId(d.prisma, auth, params.project_id), params.id),
  }),
  r({
    method: 'PATCH',
    url: `${PROJECT}/early_access_feature/:id/`,
    summary: 'Update an early access feature',
    tag: 'early_access_features',
    auth: personal('early_access_feature:write'),
    schema: {
      params: featureParams,
      body: earlyAccessFeatureUpdateSchema,
      response: { 200: earlyAccessFeatureSchema },
    },
    handler: async ({ params, body, auth }, d) => {
      const team = await resolveProject(d.prisma, auth, params.project_id);
      return d.features.update(team.id, params.id, body);
    },
  }),
  r({
    method: 'DELETE',
    url: `${PROJECT}/early_access_feature/:id/`,
    summary: 'Delete an early access feature',
    tag: 'early_access_features',
    status: 204,
    auth: personal('early_access_feature:write'),
    schema: { params: featureParams },
    handler: async ({ params, auth }, d) => {
      const team = await resolveProject(d.prisma, auth, params.project_id);
      await d.features.remove(team.id, params.id);
    },
  }),
];

/** A flag or cohort id of a path: an int4 (the schema checks the digits, this the range). */
