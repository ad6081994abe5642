// Every route management serves, one declaration each: method, path, who may call it (a
// personal API key and the scope it needs), the schemas of what comes in and what goes out, and
// a handler that calls into the feature's service. Dispatch, 405s, the scope check, validation,
// CORS, metrics labels and the OpenAPI document are derived from this table (@sett/http's route
// mechanism; docs/architecture.md, "HTTP routes"). A feature adds its routes as one more block
// in `managementRoutes.routes`.
//
// Reads check the project against the cached key context (resolveReadableProjectId); writes
// always against the database (resolveProject). Bodies are validated before the handler runs, so
// a bad body is a 400 even for a project the caller cannot see (it says nothing about the project).
import type { FastifyRequest } from 'fastify';
import { isUpload, NotFoundError, route, SerializedJson, ValidationError, type RouteTable } from '@sett/http';
import {
  listQuery,
  paginated,
  projectItemParams,
  projectParams,
  queryBoolean,
  searchListQuery,
  str,
  uuidParam,
  booleanQuery,
  limitParam,
  offsetParam,
} from './api-schemas';
import type { AuthContext } from './auth/auth-context';
import type { PersonalOrSecretCaller } from './auth/authenticators';
import { readCohortUpload } from './cohorts/cohort-upload';
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
} from './cohorts/cohort-schemas';
import {
  earlyAccessFeatureCreateSchema,
  earlyAccessFeatureSchema,
  earlyAccessFeatureUpdateSchema,
} from './early-access-features/early-access-feature-schemas';
import { listEventPage } from './events/event-handlers';
import { queryRequestSchema } from './query/run-query';
import { eventListQuery, eventPageSchema } from './events/event-schemas';
import {
  featureFlagCreateSchema,
  featureFlagListQuery,
  featureFlagSchema,
  featureFlagUpdateSchema,
  remoteConfigAnswer,
} from './feature-flags/feature-flag-schemas';
import { remoteConfigPayload } from './feature-flags/remote-config-handler';
import {
  memberCreateSchema,
  memberSchema,
  memberUpdateSchema,
  organizationCreateSchema,
  organizationSchema,
  organizationUpdateSchema,
} from './organizations/organization-schemas';
import { envelope, pageRequestInfo, parsePage, type Page } from './pagination/pagination';
import {
  deletePerson,
  deletionJobUrl,
  listDeletions,
  listPersons,
  retrieveDeletion,
  retrievePerson,
} from './persons/person-handlers';
import { deletePersons } from './persons/person-deletion';
import {
  deleteEventsQuery,
  personBulkDeleteSchema,
  personDeletionSchema,
  personListQuery,
  personSchema,
} from './persons/person-schemas';
import {
  personalApiKeyCreateSchema,
  personalApiKeySchema,
  type PersonalApiKeyCreateBody,
} from './personal-api-keys/personal-api-key-schemas';
import { resolveProject, resolveReadableProjectId } from './projects/project-access';
import { listProjects, retrieveProject } from './projects/project-reads';
import { projectCreateSchema, projectSchema, projectUpdateSchema } from './projects/project-schemas';
import { projectJson } from './projects/project-views';
import type { ManagementRouteDeps } from './route-deps';
import {
  backupCodesAnswer,
  hedgehogConfigAnswer,
  hedgehogConfigSchema,
  scenePersonalisationSchema,
  start2faAnswer,
  successAnswer,
  userSchema,
  userUpdateSchema,
  validate2faSchema,
} from './users/user-schemas';
import { stringifyPage } from './users/user-page-json';
import { loadViewer, viewerOf } from './users/viewer';
import { MAX_INT4, parseIntId } from './validate';

const r = route<ManagementRouteDeps, AuthContext>();
const personal = (scope: string) => ({ kind: 'personal_key', scope }) as const;

/** The list envelope of a page, its links built from the request (pagination.ts). */
function listAnswer<T>(
  request: FastifyRequest,
  deps: ManagementRouteDeps,
  page: Page,
  list: { count: number; results: T[] },
) {
  return envelope(pageRequestInfo(request, deps.publicUrl), page, list.count, list.results);
}

const userParams = {
  type: 'object',
  required: ['uuid'],
  properties: { uuid: { type: 'string', description: 'a user uuid, or @me' } },
} as const;

const organizationParams = {
  type: 'object',
  required: ['id'],
  properties: { id: { type: 'string', description: 'an organization id (uuid), or @current' } },
} as const;

const memberParams = {
  type: 'object',
  required: ['id', 'user_uuid'],
  properties: {
    id: organizationParams.properties.id,
    user_uuid: { type: 'string', description: "the member's user uuid, or @me" },
  },
} as const;

const featureParams = {
  type: 'object',
  required: ['project_id', 'id'],
  properties: { project_id: projectParams.properties.project_id, id: uuidParam },
} as const;

const keyParams = {
  type: 'object',
  required: ['id'],
  properties: { id: { type: 'string', maxLength: 200 } },
} as const;

const PROJECT = '/api/projects/:project_id';

const userRoutes = [
  r({
    method: 'GET',
    url: '/api/users/',
    summary: 'List users',
    description: 'Staff see every user; others see the users of their organizations.',
    tag: 'users',
    auth: personal('user:read'),
    schema: {
      querystring: {
        type: 'object',
        properties: {
          limit: limitParam,
          offset: offsetParam,
          is_staff: { ...booleanQuery, description: 'only staff (true) or non-staff (false)' },
        },
      },
      response: { 200: paginated(userSchema) },
    },
    handler: async ({ query, auth, request }, d) => {
      const page = parsePage(query);
      const list = await d.users.list(viewerOf(auth), page, queryBoolean(query.is_staff));
      // Each shared organization and team written once (user-page-json.ts): the same text.
      return new SerializedJson(stringifyPage(listAnswer(request, d, page, list), list.results));
    },
  }),
  r({
    method: 'GET',
    url: '/api/users/:uuid/',
    summary: 'Retrieve a user',
    tag: 'users',
    auth: personal('user:read'),
    schema: { params: userParams, response: { 200: userSchema } },
    handler: ({ params, auth }, d) => d.users.retrieve(viewerOf(auth), params.uuid),
  }),
  r({
    method: 'PATCH',
    url: '/api/users/:uuid/',
    summary: 'Update a user (the user itself or staff)',
    tag: 'users',
    auth: personal('user:write'),
    schema: { params: userParams, body: userUpdateSchema, response: { 200: userSchema } },
    handler: async ({ params, body, auth }, d) => {
      if (body.set_current_team !== undefined && parseIntId(String(body.set_current_team)) === undefined)
        throw new ValidationError(
          `set_current_team must be a project id between 1 and ${MAX_INT4}.`,
          'set_current_team',
          'invalid_input',
        );
      const updated = await d.users.update(await loadViewer(d.prisma, auth), params.uuid, body);
      d.onCallersChanged();
      return updated;
    },
  }),
  r({
    method: 'DELETE',
    url: '/api/users/:uuid/',
    summary: 'Delete a user (the user itself or staff)',
    tag: 'users',
    status: 204,
    auth: personal('user:write'),
    schema: { params: userParams },
    handler: async ({ params, auth }, d) => {
      await d.users.remove(await loadViewer(d.prisma, auth), params.uuid);
      d.onCallersChanged();
    },
  }),
  r({
    method: 'GET',
    url: '/api/users/:uuid/hedgehog_config/',
    summary: 'Read the hedgehog config',
    tag: 'users',
    auth: personal('user:read'),
    schema: { params: userParams, response: { 200: hedgehogConfigAnswer } },
    handler: ({ params, auth }, d) => d.users.hedgehogConfig(viewerOf(auth), params.uuid),
  }),
  r({
    method: 'PATCH',
    url: '/api/users/:uuid/hedgehog_config/',
    summary: 'Merge into the hedgehog config (at most 16 KB of JSON after the merge)',
    tag: 'users',
    auth: personal('user:write'),
    schema: { params: userParams, body: hedgehogConfigSchema, response: { 200: hedgehogConfigAnswer } },
    handler: async ({ params, body, auth }, d) =>
      d.users.updateHedgehogConfig(
        await loadViewer(d.prisma, auth),
        params.uuid,
        body as Record<string, unknown>,
      ),
  }),
  r({
    method: 'POST',
    url: '/api/users/:uuid/scene_personalisation/',
    summary: 'Set the dashboard of a scene (at most 100 scenes)',
    tag: 'users',
    auth: personal('user:write'),
    schema: { params: userParams, body: scenePersonalisationSchema, response: { 200: userSchema } },
    handler: async ({ params, body, auth }, d) =>
      d.users.addScenePersonalisation(await loadViewer(d.prisma, auth), params.uuid, body),
  }),
  r({
    method: 'GET',
    url: '/api/users/:uuid/start_2fa_setup/',
    summary: 'Start TOTP setup (answers the secret)',
    description: 'A GET that creates a secret, so it needs user:write.',
    tag: 'users',
    compat: {
      posthog: 'differs',
      note: 'answers the secret and otpauth URL (PostHog keeps them in the session)',
    },
    auth: personal('user:write'),
    schema: { params: userParams, response: { 200: start2faAnswer } },
    handler: async ({ params, auth }, d) =>
      d.users.start2faSetup(await loadViewer(d.prisma, auth), params.uuid),
  }),
  r({
    method: 'POST',
    url: '/api/users/:uuid/validate_2fa/',
    summary: 'Confirm TOTP setup with a code',
    tag: 'users',
    auth: personal('user:write'),
    schema: { params: userParams, body: validate2faSchema, response: { 200: successAnswer } },
    handler: async ({ params, body, auth }, d) =>
      d.users.validate2fa(await loadViewer(d.prisma, auth), params.uuid, body.token),
  }),
  r({
    method: 'POST',
    url: '/api/users/:uuid/two_factor_backup_codes/',
    summary: 'New backup codes (the old ones stop working)',
    tag: 'users',
    auth: personal('user:write'),
    schema: { params: userParams, response: { 200: backupCodesAnswer } },
    handler: async ({ params, auth }, d) =>
      d.users.regenerateBackupCodes(await loadViewer(d.prisma, auth), params.uuid),
  }),
];

const projectRoutes = [
  r({
    method: 'GET',
    url: '/api/projects/',
    summary: "List the projects of the caller's organizations",
    tag: 'projects',
    auth: personal('project:read'),
    schema: { querystring: listQuery, response: { 200: paginated(projectSchema) } },
    handler: async ({ query, auth, request }, d) => {
      const page = parsePage(query);
      return listAnswer(request, d, page, await listProjects(d.prisma, auth, page));
    },
  }),
  r({
    method: 'POST',
    url: '/api/projects/',
    summary: 'Create a project in an organization where the caller is an admin or owner',
    tag: 'projects',
    status: 201,
    auth: personal('project:write'),
    schema: { body: projectCreateSchema, response: { 201: projectSchema } },
    handler: async ({ body, auth }, d) => {
      const user = await d.prisma.user.findUniqueOrThrow({
        where: { id: auth.userId },
        select: { currentOrganizationId: true },
      });
      const team = await d.projects.create(body, auth.userId, user.currentOrganizationId);
      d.onCallersChanged();
      return projectJson(team);
    },
  }),
  r({
    method: 'GET',
    url: `${PROJECT}/`,
    summary: 'Retrieve a project',
    tag: 'projects',
    auth: personal('project:read'),
    schema: { params: projectParams, response: { 200: projectSchema } },
    handler: ({ params, auth }, d) => retrieveProject(d.prisma, auth, params.project_id),
  }),
  r({
    method: 'PATCH',
    url: `${PROJECT}/`,
    summary: 'Update the name and SDK settings (remote config is rebuilt)',
    description: 'Any member; data_retention_days (it deletes data) needs an organization admin.',
    tag: 'projects',
    auth: personal('project:write'),
    schema: { params: projectParams, body: projectUpdateSchema, response: { 200: projectSchema } },
    handler: async ({ params, body, auth }, d) => {
      const team = await resolveProject(d.prisma, auth, params.project_id);
      return projectJson(await d.projects.update(team, body, auth.userId));
    },
  }),
  r({
    method: 'DELETE',
    url: `${PROJECT}/`,
    summary: 'Delete a project (admins)',
    description:
      'Gone for every API, capture and decide at once (its token is revoked); its data is purged by a background job.',
    tag: 'projects',
    status: 204,
    auth: personal('project:write'),
    schema: { params: projectParams },
    handler: async ({ params, auth }, d) => {
      const team = await resolveProject(d.prisma, auth, params.project_id);
      await d.projects.remove(team, auth.userId);
      d.onCallersChanged();
    },
  }),
  ...(['PATCH', 'POST'] as const).map((method) =>
    r({
      method,
      url: `${PROJECT}/reset_token/`,
      summary:
        method === 'PATCH'
          ? 'New project API token (phc_); the old one stops working in capture and decide at once (admins)'
          : 'Same as PATCH reset_token (PostHog takes both)',
      tag: 'projects',
      auth: personal('project:write'),
      schema: { params: projectParams, response: { 200: projectSchema } },
      handler: async ({ params, auth }, d) => {
        const team = await resolveProject(d.prisma, auth, params.project_id);
        return projectJson(await d.projects.resetToken(team, auth.userId));
      },
    }),
  ),
  r({
    method: 'PATCH',
    url: `${PROJECT}/rotate_secret_token/`,
    summary: 'New project secret API key (phs_), answered once in secret_api_token (admins)',
    description: 'The previous key stays valid as the backup until delete_secret_token_backup.',
    tag: 'projects',
    auth: personal('project:write'),
    schema: { params: projectParams, response: { 200: projectSchema } },
    handler: async ({ params, auth }, d) => {
      const team = await resolveProject(d.prisma, auth, params.project_id);
      const rotated = await d.projects.rotateSecretToken(team, auth.userId);
      d.onCallersChanged(); // remembered secret keys (auth-middleware) must not outlive a rotation
      return projectJson(rotated.team, rotated.secretApiToken);
    },
  }),
  r({
    method: 'PATCH',
    url: `${PROJECT}/delete_secret_token_backup/`,
    summary: 'Stop accepting the previous secret API key (admins)',
    tag: 'projects',
    auth: personal('project:write'),
    schema: { params: projectParams, response: { 200: projectSchema } },
    handler: async ({ params, auth }, d) => {
      const team = await resolveProject(d.prisma, auth, params.project_id);
      const updated = await d.projects.deleteSecretTokenBackup(team, auth.userId);
      d.onCallersChanged(); // the backup key must stop working at once
      return projectJson(updated);
    },
  }),
];

const organizationRoutes = [
  r({
    method: 'GET',
    url: '/api/organizations/',
    summary: "List the caller's organizations",
    tag: 'organizations',
    auth: personal('organization:read'),
    schema: { querystring: listQuery, response: { 200: paginated(organizationSchema) } },
    handler: async ({ query, auth, request }, d) => {
      const page = parsePage(query);
      return listAnswer(request, d, page, await d.organizations.list(auth.userId, page));
    },
  }),
  r({
    method: 'POST',
    url: '/api/organizations/',
    summary: 'Create an organization: the caller becomes its owner; a first project is created',
    tag: 'organizations',
    status: 201,
    auth: personal('organization:write'),
    schema: { body: organizationCreateSchema, response: { 201: organizationSchema } },
    handler: async ({ body, auth }, d) => {
      const created = await d.organizations.create(auth.userId, body);
      d.onMembershipsChanged(created.id);
      return created;
    },
  }),
  r({
    method: 'GET',
    url: '/api/organizations/:id/',
    summary: 'Retrieve an organization (members only)',
    tag: 'organizations',
    auth: personal('organization:read'),
    schema: { params: organizationParams, response: { 200: organizationSchema } },
    handler: ({ params, auth }, d) => d.organizations.retrieve(auth.userId, params.id),
  }),
  r({
    method: 'PATCH',
    url: '/api/organizations/:id/',
    summary: 'Update an organization (admins and owners)',
    tag: 'organizations',
    auth: personal('organization:write'),
    schema: {
      params: organizationParams,
      body: organizationUpdateSchema,
      response: { 200: organizationSchema },
    },
    handler: ({ params, body, auth }, d) => d.organizations.update(auth.userId, params.id, body),
  }),
  r({
    method: 'DELETE',
    url: '/api/organizations/:id/',
    summary: 'Delete an organization (owners; 400 while it still has projects)',
    tag: 'organizations',
    status: 204,
    auth: personal('organization:write'),
    schema: { params: organizationParams },
    handler: async ({ params, auth }, d) =>
      d.onMembershipsChanged(await d.organizations.remove(auth.userId, params.id)),
  }),
  r({
    method: 'GET',
    url: '/api/organizations/:id/members/',
    summary: 'List members (level ascending, newest first)',
    tag: 'organizations',
    auth: personal('organization_member:read'),
    schema: {
      params: organizationParams,
      querystring: listQuery,
      response: { 200: paginated(memberSchema) },
    },
    handler: async ({ params, query, auth, request }, d) => {
      const org = await d.organizations.membershipOf(auth.userId, params.id);
      const page = parsePage(query);
      return listAnswer(request, d, page, await d.members.list(org.id, page));
    },
  }),
  r({
    method: 'POST',
    url: '/api/organizations/:id/members/',
    summary: 'Add an existing user by e-mail (admins; up to their own level)',
    tag: 'organizations',
    status: 201,
    auth: personal('organization_member:write'),
    schema: { params: organizationParams, body: memberCreateSchema, response: { 201: memberSchema } },
    handler: async ({ params, body, auth }, d) => {
      const org = await d.organizations.membershipOf(auth.userId, params.id);
      const created = await d.members.add(org.id, auth.userId, body);
      d.onMembershipsChanged(org.id);
      return created;
    },
  }),
  r({
    method: 'GET',
    url: '/api/organizations/:id/members/:user_uuid/',
    summary: 'Retrieve a member',
    tag: 'organizations',
    auth: personal('organization_member:read'),
    schema: { params: memberParams, response: { 200: memberSchema } },
    handler: async ({ params, auth }, d) => {
      const org = await d.organizations.membershipOf(auth.userId, params.id);
      return d.members.retrieve(org.id, auth.userId, params.user_uuid);
    },
  }),
  r({
    method: 'PATCH',
    url: '/api/organizations/:id/members/:user_uuid/',
    summary: "Change a member's level (admins; owners only by owners; never one's own)",
    tag: 'organizations',
    auth: personal('organization_member:write'),
    schema: { params: memberParams, body: memberUpdateSchema, response: { 200: memberSchema } },
    handler: async ({ params, body, auth }, d) => {
      const org = await d.organizations.membershipOf(auth.userId, params.id);
      const updated = await d.members.updateLevel(org.id, auth.userId, params.user_uuid, body.level);
      d.onMembershipsChanged(org.id);
      return updated;
    },
  }),
  r({
    method: 'DELETE',
    url: '/api/organizations/:id/members/:user_uuid/',
    summary: 'Remove a member, or leave (the user account stays; the last owner cannot leave)',
    tag: 'organizations',
    status: 204,
    auth: personal('organization_member:write'),
    schema: { params: memberParams },
    handler: async ({ params, auth }, d) => {
      const org = await d.organizations.membershipOf(auth.userId, params.id);
      await d.members.remove(org.id, auth.userId, params.user_uuid);
      d.onMembershipsChanged(org.id);
    },
  }),
];

const earlyAccessFeatureRoutes = [
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
function itemId(param: string): number {
  const id = parseIntId(param);
  if (!id) throw new NotFoundError();
  return id;
}

const featureFlagRoutes = [
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

const cohortRoutes = [
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

const eventRoutes = [
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

const queryRoutes = [
  r({
    method: 'POST',
    url: `${PROJECT}/query/`,
    aliases: ['/api/environments/:project_id/query/'],
    summary: "Run a query (TrendsQuery, FunnelsQuery, RetentionQuery, EventsQuery) in PostHog's shapes",
    description:
      'Served kinds: TrendsQuery (EventsNode series; math total, dau, weekly_active, monthly_active, unique_session, ' +
      'unique_group and property aggregates; event, person and group filters and breakdowns; formula; compare), ' +
      'FunnelsQuery (ordered, strict or unordered steps, window, exclusions, breakdown, steps or trends view), ' +
      'RetentionQuery (first time or recurring, Hour to Month, person breakdown) and EventsQuery (a subset of select), ' +
      'also inside InsightVizNode, DataVisualizationNode and DataTableNode. Any other kind or field is a 400 naming it. ' +
      'Answers are cached in Redis until a batch is ingested for the project (refresh). Limits (docs/query.md): ' +
      'an answer holds at most 50,000 numbers (400 naming the field to narrow); queries at once are capped per ' +
      'user, per project and in all over every replica (429 with Retry-After); one deadline, QUERY_TIMEOUT_MS, ' +
      'covers the request (504 query_timeout).',
    tag: 'query',
    compat: {
      posthog: 'differs',
      note: 'TrendsQuery, FunnelsQuery, RetentionQuery, EventsQuery (select subset); no HogQLQuery, actions, cohorts in filters or async query status',
    },
    auth: personal('query:read'),
    schema: { params: projectParams, body: queryRequestSchema, response: { 200: { type: 'object' } } },
    handler: async ({ params, body, auth, reply }, d) => {
      const teamId = await resolveReadableProjectId(d.prisma, auth, params.project_id);
      const { rows } = await d.pool.query<{ timezone: string; test_account_filters: unknown }>(
        'SELECT timezone, test_account_filters FROM teams WHERE id = $1',
        [teamId],
      );
      // A client that leaves before the answer stops its query.
      const gone = new AbortController();
      reply.raw.once('close', () => {
        if (!reply.raw.writableFinished) gone.abort();
      });
      return d.queries.run(
        {
          userId: auth.userId,
          teamId,
          timeZone: rows[0]?.timezone ?? 'UTC',
          testAccountFilters: rows[0]?.test_account_filters ?? [],
        },
        body.query as Record<string, unknown>,
        gone.signal,
        body.refresh,
      );
    },
  }),
];

const personRoutes = [
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

const personalApiKeyRoutes = [
  r({
    method: 'GET',
    url: '/api/personal_api_keys/',
    summary: "List the caller's personal API keys",
    tag: 'personal_api_keys',
    auth: personal('personal_api_key:read'),
    schema: { querystring: listQuery, response: { 200: paginated(personalApiKeySchema) } },
    handler: async ({ query, auth, request }, d) => {
      const page = parsePage(query);
      return listAnswer(request, d, page, await d.personalApiKeys.list(auth.userId, page));
    },
  }),
  r({
    method: 'POST',
    url: '/api/personal_api_keys/',
    summary: 'Create a personal API key (its value is answered once)',
    description: 'A key can only create keys with scopes it holds itself.',
    tag: 'personal_api_keys',
    status: 201,
    auth: personal('personal_api_key:write'),
    schema: { body: personalApiKeyCreateSchema, response: { 201: personalApiKeySchema } },
    handler: ({ body, auth }, d) => d.personalApiKeys.create(auth, body as PersonalApiKeyCreateBody),
  }),
  r({
    method: 'GET',
    url: '/api/personal_api_keys/:id/',
    summary: 'Retrieve a personal API key',
    tag: 'personal_api_keys',
    auth: personal('personal_api_key:read'),
    schema: { params: keyParams, response: { 200: personalApiKeySchema } },
    handler: ({ params, auth }, d) => d.personalApiKeys.retrieve(auth.userId, params.id),
  }),
  r({
    method: 'DELETE',
    url: '/api/personal_api_keys/:id/',
    summary: 'Delete a personal API key',
    tag: 'personal_api_keys',
    status: 204,
    auth: personal('personal_api_key:write'),
    schema: { params: keyParams },
    handler: async ({ params, auth }, d) => {
      await d.personalApiKeys.remove(auth.userId, params.id);
      d.onCallersChanged();
    },
  }),
];

const schemaRoutes = [
  r({
    method: 'GET',
    url: '/api/schema/',
    summary: 'This OpenAPI 3.1 document: every route of every Sett service',
    description: 'Public, so that client generators can fetch it without a key.',
    tag: 'schema',
    auth: { kind: 'none' },
    schema: { response: { 200: { type: 'object', required: ['openapi', 'paths'] } } },
    handler: (_ctx, d) => d.openApiDocument(),
  }),
];

export const managementRoutes: RouteTable<ManagementRouteDeps> = {
  service: 'management',
  routes: [
    ...userRoutes,
    ...projectRoutes,
    ...organizationRoutes,
    ...earlyAccessFeatureRoutes,
    ...featureFlagRoutes,
    ...cohortRoutes,
    ...eventRoutes,
    ...queryRoutes,
    ...personRoutes,
    ...personalApiKeyRoutes,
    ...schemaRoutes,
  ],
};
