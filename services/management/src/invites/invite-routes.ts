// Invites (/api/organizations/:id/invites/) and accepting one (/api/signup/:invite_id/), in
// PostHog's shapes; accepting signs the new user in (the session cookies, as /api/login/ sets them).
import { arrayOf, dateTime, int, shape, str, strOrNull, creatorSchema } from '../api-schemas';
import { r, personal, organizationParams } from '../route-kit';
import { setSessionCookies } from '../sessions/cookies';
import { clientOf } from '../sessions/sign-in';
import { LEVELS } from '../organizations/levels';
import type { InviteCreate } from './invite-service';

const inviteSchema = shape({
  id: str,
  target_email: str,
  first_name: str,
  emailing_attempt_made: { type: 'boolean' },
  level: int,
  is_expired: { type: 'boolean' },
  created_by: creatorSchema,
  created_at: dateTime,
  updated_at: dateTime,
  message: strOrNull,
  private_project_access: arrayOf({}),
});

const inviteParams = {
  type: 'object',
  required: ['id', 'invite_id'],
  properties: { id: organizationParams.properties.id, invite_id: { type: 'string', maxLength: 100 } },
} as const;

const signupParams = {
  type: 'object',
  required: ['invite_id'],
  properties: { invite_id: { type: 'string', maxLength: 100 } },
} as const;

export const inviteRoutes = [
  r({
    method: 'GET',
    url: '/api/organizations/:id/invites/',
    summary: 'Open invites, newest first (admins)',
    tag: 'organizations',
    compat: { posthog: 'differs', note: 'not paginated (at most 500 open invites)' },
    auth: personal('organization_member:read'),
    schema: { params: organizationParams, response: { 200: arrayOf(inviteSchema) } },
    handler: async ({ params, auth }, d) => {
      const org = await d.organizations.membershipOf(auth.userId, params.id);
      return d.invites.list(org);
    },
  }),
  r({
    method: 'POST',
    url: '/api/organizations/:id/invites/',
    summary: 'Invite an email at a level (admins; up to their own level); the id is the link’s secret',
    description:
      'Sett sends no email: give the person the link `<console>/#/signup/<id>`. Valid 3 days, once; a new invite for the same email replaces the open one.',
    tag: 'organizations',
    status: 201,
    compat: { posthog: 'differs', note: 'no email is sent; private_project_access is not served' },
    auth: personal('organization_member:write'),
    schema: {
      params: organizationParams,
      body: {
        type: 'object',
        required: ['target_email'],
        additionalProperties: false,
        properties: {
          target_email: { type: 'string', format: 'email', maxLength: 254 },
          first_name: { type: 'string', maxLength: 150 },
          level: { type: 'integer', enum: [...LEVELS] },
          message: { type: ['string', 'null'], maxLength: 2000 },
        },
      },
      response: { 201: inviteSchema },
    },
    handler: async ({ params, body, auth }, d) => {
      const org = await d.organizations.membershipOf(auth.userId, params.id);
      return d.invites.create(org, auth.userId, body as InviteCreate);
    },
  }),
  r({
    method: 'DELETE',
    url: '/api/organizations/:id/invites/:invite_id/',
    summary: 'Revoke an invite (admins)',
    tag: 'organizations',
    status: 204,
    compat: { posthog: 'same' },
    auth: personal('organization_member:write'),
    schema: { params: inviteParams },
    handler: async ({ params, auth, reply }, d) => {
      const org = await d.organizations.membershipOf(auth.userId, params.id);
      await d.invites.remove(org, params.invite_id);
      reply.code(204);
    },
  }),
  r({
    method: 'GET',
    url: '/api/signup/:invite_id/',
    summary: 'What an invite link is for: the email, the organization (no credentials: the id is the secret)',
    tag: 'organizations',
    compat: { posthog: 'same' },
    auth: { kind: 'none' },
    schema: {
      params: signupParams,
      response: {
        200: shape({ id: str, target_email: str, first_name: str, organization_name: str }),
      },
    },
    handler: async ({ params }, d) => d.invites.preview(params.invite_id),
  }),
  r({
    method: 'POST',
    url: '/api/signup/:invite_id/',
    summary: 'Accept an invite: the account with its password and the membership; signs the new user in',
    tag: 'organizations',
    status: 201,
    compat: { posthog: 'differs', note: 'an email with an account already answers 400 (sign in instead)' },
    auth: { kind: 'none' },
    schema: {
      params: signupParams,
      body: {
        type: 'object',
        required: ['password'],
        additionalProperties: false,
        properties: {
          first_name: { type: 'string', maxLength: 150 },
          password: { type: 'string', minLength: 8, maxLength: 128 },
        },
      },
      response: { 201: shape({ id: str, email: str, organization_id: str }) },
    },
    handler: async ({ params, body, request, reply }, d) => {
      const created = await d.invites.accept(params.invite_id, body);
      const session = await d.sessions.create(created.userId, true, clientOf(request, d.trustedProxyHops));
      setSessionCookies(request, reply, d.cookiePolicy, session);
      d.onMembershipsChanged(created.organizationId);
      return { id: created.uuid, email: created.email, organization_id: created.organizationId };
    },
  }),
];
