// The routes of feature flags, and a flag's remote config payload.
import { route } from '@sett/http';
import { paginated, projectItemParams, projectParams, queryBoolean, str } from '../api-schemas';
import type { PersonalOrSecretCaller } from '../auth/authenticators';
import {
  featureFlagCreateSchema,
  featureFlagListQuery,
  featureFlagSchema,
  featureFlagUpdateSchema,
  remoteConfigAnswer,
} from './feature-flag-schemas';
import { remoteConfigPayload } from './remote-config-handler';
import { parsePage } from '../pagination/pagination';
import { resolveProject, resolveReadableProjectId } from '../projects/project-access';
import type { ManagementRouteDeps } from '../route-deps';
import { r, personal, listAnswer, itemId, PROJECT } from '../route-kit';

export const featureFlagRoutes = [
  r({
    method: 'GET',
    url: `${PROJECT}/feature_flags/`,
    summary: 'List feature flags, newest first',
    tag: 'feature_flags',
    compat: {
      posthog: 'differs',
      note: 'filters search, active, type (experiment matches none); no tags, created_by_id or evaluation_runtime',
    },
    auth: personal('feature_flag:read'),
    schema: {
      params: projectParams,
      querystring: featureFlagListQuery,
      response: { 200: paginated(featureFlagSchema) },
    },
    handler: async ({ params, query, auth, request }, d) => {
      const teamId = await resolveReadableProjectId(d.prisma, auth, params.project_id);
      const page = parsePage(query);
      const filters = { search: query.search, active: queryBoolean(query.active), type: query.type };
      return listAnswer(request, d, page, await d.flags.list(teamId, page, filters));
    },
  }),
  r({
    method: 'POST',
    url: `${PROJECT}/feature_flags/`,
    summary: 'Create a feature flag',
    tag: 'feature_flags',
    status: 201,
    auth: personal('feature_flag:write'),
    schema: { params: projectParams, body: featureFlagCreateSchema, response: { 201: featureFlagSchema } },
    handler: async ({ params, body, auth }, d) => {
      const team = await resolveProject(d.prisma, auth, params.project_id);
      return d.flags.create(team.id, auth.userId, body);
    },
  }),
  r({
    method: 'GET',
    url: `${PROJECT}/feature_flags/:id/`,
    summary: 'Retrieve a feature flag',
    tag: 'feature_flags',
    auth: personal('feature_flag:read'),
    schema: { params: projectItemParams, response: { 200: featureFlagSchema } },
    handler: async ({ params, auth }, d) =>
      d.flags.retrieve(await resolveReadableProjectId(d.prisma, auth, params.project_id), itemId(params.id)),
  }),
  r({
    method: 'PATCH',
    url: `${PROJECT}/feature_flags/:id/`,
    summary: 'Update a feature flag ({deleted: true} soft-deletes it)',
    tag: 'feature_flags',
    auth: personal('feature_flag:write'),
    schema: {
      params: projectItemParams,
      body: featureFlagUpdateSchema,
      response: { 200: featureFlagSchema },
    },
    handler: async ({ params, body, auth }, d) => {
      const team = await resolveProject(d.prisma, auth, params.project_id);
      return d.flags.update(team.id, itemId(params.id), body);
    },
  }),
  r({
    method: 'DELETE',
    url: `${PROJECT}/feature_flags/:id/`,
    summary: 'Soft-delete a feature flag',
    tag: 'feature_flags',
    status: 204,
    auth: personal('feature_flag:write'),
    schema: { params: projectItemParams },
    handler: async ({ params, auth }, d) => {
      const team = await resolveProject(d.prisma, auth, params.project_id);
      await d.flags.remove(team.id, itemId(params.id));
    },
  }),
  route<ManagementRouteDeps, PersonalOrSecretCaller>()({
    method: 'GET',
    url: `${PROJECT}/feature_flags/:id/remote_config`,
    summary: "A remote configuration flag's payload, decrypted",
    description:
      "The payload's JSON text as a JSON string (the SDKs parse it twice), or null. Also takes the project " +
      'secret key (phs_); project_id may be @current, and ?token=<project API key> picks the project for it.',
    tag: 'feature_flags',
    auth: { kind: 'personal_or_secret_key', scope: 'feature_flag:read' },
    schema: {
      params: {
        type: 'object',
        required: ['project_id', 'id'],
        properties: {
          project_id: projectParams.properties.project_id,
          id: { type: 'string', maxLength: 400, description: 'a flag key or id' },
        },
      },
      querystring: {
        type: 'object',
        properties: { token: { ...str, maxLength: 400, description: 'the project API key (phc_)' } },
      },
      response: { 200: remoteConfigAnswer },
    },
    handler: ({ params, query, auth }, d) =>
      remoteConfigPayload(d, auth, { project_id: params.project_id, key: params.id }, query.token),
  }),
];
