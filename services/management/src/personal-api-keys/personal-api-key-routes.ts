// The routes of personal API keys.
import { listQuery, paginated } from '../api-schemas';
import { parsePage } from '../pagination/pagination';
import {
  personalApiKeyCreateSchema,
  personalApiKeySchema,
  type PersonalApiKeyCreateBody,
} from './personal-api-key-schemas';
import { r, personal, listAnswer, keyParams } from '../route-kit';

export const personalApiKeyRoutes = [
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
    description:
      'A key can only create keys with scopes it holds itself, limited to projects and organizations ' +
      'its user belongs to, and within its own limits.',
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
    handler: ({ params, auth }, d) => d.personalApiKeys.retrieve(auth, params.id),
  }),
  r({
    method: 'GET',
    url: '/api/personal_api_keys/@current/',
    summary: 'The key making the request: its scopes and the projects and organizations it may use',
    description:
      "PostHog's API clients start here: the key's scopes, and the projects (scoped_teams) and " +
      'organizations (scoped_organizations) it is limited to (null: all). Any valid key may read itself.',
    tag: 'personal_api_keys',
    auth: { kind: 'personal_key', scope: null },
    schema: { response: { 200: personalApiKeySchema } },
    handler: ({ auth }, d) => d.personalApiKeys.retrieve(auth, '@current'),
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
