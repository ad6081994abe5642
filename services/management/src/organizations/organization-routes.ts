// The routes of organizations and their members.
import { NotFoundError } from '@sett/http';
import { listQuery, paginated, projectIdParam } from '../api-schemas';
import {
  memberCreateSchema,
  memberSchema,
  memberUpdateSchema,
  organizationCreateSchema,
  organizationSchema,
  organizationUpdateSchema,
} from './organization-schemas';
import { parsePage } from '../pagination/pagination';
import { r, personal, listAnswer, organizationParams, memberParams } from '../route-kit';
import { inKeyScopeOrganization, isKeyScoped } from '../auth/key-scoping';
import { projectCreateSchema, projectSchema } from '../projects/project-schemas';
import { projectJson } from '../projects/project-views';
import { listProjects } from '../projects/project-reads';
import { resolveProject } from '../projects/project-access';

export const organizationRoutes = [
  r({
    method: 'GET',
    url: '/api/organizations/',
    summary: "List the caller's organizations",
    tag: 'organizations',
    auth: personal('organization:read'),
    schema: { querystring: listQuery, response: { 200: paginated(organizationSchema) } },
    handler: async ({ query, auth, request }, d) => {
      const page = parsePage(query);
      const within = isKeyScoped(auth)
        ? [...auth.levels.keys()].filter((id) => inKeyScopeOrganization(auth, id))
        : undefined;
      return listAnswer(request, d, page, await d.organizations.list(auth.userId, page, within));
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
    url: '/api/organizations/:id/projects/',
    summary: "List an organization's projects (those the key reaches)",
    tag: 'organizations',
    auth: personal('project:read'),
    schema: {
      params: organizationParams,
      querystring: listQuery,
      response: { 200: paginated(projectSchema) },
    },
    handler: async ({ params, query, auth, request }, d) => {
      const org = await d.organizations.membershipOf(auth.userId, params.id);
      const page = parsePage(query);
      return listAnswer(request, d, page, await listProjects(d.prisma, auth, page, org.id));
    },
  }),
  r({
    method: 'POST',
    url: '/api/organizations/:id/projects/',
    summary: 'Create a project in the organization (admins and owners)',
    tag: 'organizations',
    status: 201,
    auth: personal('project:write'),
    schema: {
      params: organizationParams,
      body: projectCreateSchema,
      response: { 201: projectSchema },
    },
    handler: async ({ params, body, auth }, d) => {
      const org = await d.organizations.membershipOf(auth.userId, params.id);
      const team = await d.projects.create({ ...body, organization: org.id }, auth.userId, org.id);
      d.onCallersChanged();
      return projectJson(team);
    },
  }),
  r({
    method: 'GET',
    url: '/api/organizations/:id/projects/:project_id/',
    summary: "Retrieve one of the organization's projects",
    tag: 'organizations',
    auth: personal('project:read'),
    schema: {
      params: {
        type: 'object',
        required: ['id', 'project_id'],
        properties: { id: organizationParams.properties.id, project_id: projectIdParam },
      },
      response: { 200: projectSchema },
    },
    handler: async ({ params, auth }, d) => {
      const org = await d.organizations.membershipOf(auth.userId, params.id);
      const team = await resolveProject(d.prisma, auth, params.project_id);
      if (team.organizationId !== org.id) throw new NotFoundError('Project not found.');
      return projectJson(team);
    },
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
