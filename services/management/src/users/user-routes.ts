// The routes of users: /api/users/ and a user's settings (hedgehog, scene personalisation, two-factor).
import { SerializedJson, ValidationError } from '@sett/http';
import { paginated, queryBoolean, booleanQuery, limitParam, offsetParam } from '../api-schemas';
import { parsePage } from '../pagination/pagination';
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
} from './user-schemas';
import { stringifyPage } from './user-page-json';
import { loadViewer, viewerOf } from './viewer';
import { MAX_INT4, parseIntId } from '../validate';
import { r, personal, listAnswer, userParams } from '../route-kit';

export const userRoutes = [
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
    description:
      'A password change ({current_password, password}, the user only) ends every other browser session of the user.',
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
      // A new password ends the user's other browser sessions (only the user changes it).
      if (body.password !== undefined) await d.sessions.endAllOf(auth.userId, auth.sessionId);
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
