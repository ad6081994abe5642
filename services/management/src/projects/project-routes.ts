// The routes of projects: list, create, retrieve, update, delete, and their keys.
import { listQuery, paginated, projectParams } from '../api-schemas';
import { parsePage } from '../pagination/pagination';
import { resolveProject } from './project-access';
import { listProjects, retrieveProject } from './project-reads';
import { projectCreateSchema, projectSchema, projectUpdateSchema } from './project-schemas';
import { projectJson } from './project-views';
import { r, personal, listAnswer, PROJECT } from '../route-kit';
import { requireKeyScopeForNewProject } from '../auth/key-scoping';

export const projectRoutes = [
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
      requireKeyScopeForNewProject(auth, body.organization?.toLowerCase() ?? user.currentOrganizationId);
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
