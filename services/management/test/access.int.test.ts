// Every endpoint: no key -> 401, a key without the operation's scope -> 403 naming the scope,
// another organization's resource -> 404. Plus the key formats that are refused (the rate
// limit has its own file, rate-limit.int.test.ts).
import { call, createKey, seed, startHarness, type Fixture, type Harness } from './helpers';

let h: Harness;
let f: Fixture;
let eafB: string;
let flagB: number;
let allKeyA: string; // alice, all scopes, org A only

beforeAll(async () => {
  h = await startHarness();
  f = await seed(h.prisma);
  allKeyA = await createKey(h.prisma, f.alice.id, ['*']);
  const bobKey = await createKey(h.prisma, f.bob.id, ['*']);
  const created = await call(h, 'POST', `/api/projects/${f.teamB.id}/early_access_feature/`, bobKey, {
    name: 'B feature',
  });
  expect(created.status).toBe(201);
  eafB = created.body.id;
  flagB = created.body.feature_flag_id;
});
afterAll(() => h.stop());

type Ep = { method: string; path: () => string; scope: string; otherOrg?: () => string; body?: unknown };
const endpoints: Ep[] = [
  { method: 'GET', path: () => '/api/users/', scope: 'user:read' },
  {
    method: 'GET',
    path: () => '/api/users/@me/',
    scope: 'user:read',
    otherOrg: () => `/api/users/${f.bob.uuid}/`,
  },
  {
    method: 'PATCH',
    path: () => '/api/users/@me/',
    scope: 'user:write',
    otherOrg: () => `/api/users/${f.bob.uuid}/`,
    body: { first_name: 'x' },
  },
  {
    method: 'DELETE',
    path: () => `/api/users/${f.bob.uuid}/`,
    scope: 'user:write',
    otherOrg: () => `/api/users/${f.bob.uuid}/`,
  },
  {
    method: 'GET',
    path: () => '/api/users/@me/hedgehog_config/',
    scope: 'user:read',
    otherOrg: () => `/api/users/${f.bob.uuid}/hedgehog_config/`,
  },
  {
    method: 'PATCH',
    path: () => '/api/users/@me/hedgehog_config/',
    scope: 'user:write',
    otherOrg: () => `/api/users/${f.bob.uuid}/hedgehog_config/`,
    body: { a: 1 },
  },
  {
    method: 'POST',
    path: () => '/api/users/@me/scene_personalisation/',
    scope: 'user:write',
    otherOrg: () => `/api/users/${f.bob.uuid}/scene_personalisation/`,
    body: { scene: 'x', dashboard: 1 },
  },
  {
    method: 'GET',
    path: () => '/api/users/@me/start_2fa_setup/',
    scope: 'user:write',
    otherOrg: () => `/api/users/${f.bob.uuid}/start_2fa_setup/`,
  },
  {
    method: 'POST',
    path: () => '/api/users/@me/two_factor_backup_codes/',
    scope: 'user:write',
    otherOrg: () => `/api/users/${f.bob.uuid}/two_factor_backup_codes/`,
    body: {},
  },
  { method: 'GET', path: () => '/api/projects/', scope: 'project:read' },
  {
    method: 'GET',
    path: () => `/api/projects/${f.teamA.id}/`,
    scope: 'project:read',
    otherOrg: () => `/api/projects/${f.teamB.id}/`,
  },
  {
    method: 'GET',
    path: () => `/api/projects/${f.teamA.id}/early_access_feature/`,
    scope: 'early_access_feature:read',
    otherOrg: () => `/api/projects/${f.teamB.id}/early_access_feature/`,
  },
  {
    method: 'POST',
    path: () => `/api/projects/${f.teamA.id}/early_access_feature/`,
    scope: 'early_access_feature:write',
    otherOrg: () => `/api/projects/${f.teamB.id}/early_access_feature/`,
    body: { name: 'n' },
  },
  {
    method: 'GET',
    path: () => `/api/projects/${f.teamA.id}/early_access_feature/${eafB}/`,
    scope: 'early_access_feature:read',
    otherOrg: () => `/api/projects/${f.teamB.id}/early_access_feature/${eafB}/`,
  },
  {
    method: 'PATCH',
    path: () => `/api/projects/${f.teamA.id}/early_access_feature/${eafB}/`,
    scope: 'early_access_feature:write',
    otherOrg: () => `/api/projects/${f.teamB.id}/early_access_feature/${eafB}/`,
    body: { name: 'x' },
  },
  {
    method: 'DELETE',
    path: () => `/api/projects/${f.teamA.id}/early_access_feature/${eafB}/`,
    scope: 'early_access_feature:write',
    otherOrg: () => `/api/projects/${f.teamB.id}/early_access_feature/${eafB}/`,
  },
  {
    method: 'GET',
    path: () => `/api/projects/${f.teamA.id}/feature_flags/`,
    scope: 'feature_flag:read',
    otherOrg: () => `/api/projects/${f.teamB.id}/feature_flags/`,
  },
  {
    method: 'POST',
    path: () => `/api/projects/${f.teamA.id}/feature_flags/`,
    scope: 'feature_flag:write',
    otherOrg: () => `/api/projects/${f.teamB.id}/feature_flags/`,
    body: { key: 'k' },
  },
  {
    method: 'GET',
    path: () => `/api/projects/${f.teamA.id}/feature_flags/${flagB}/`,
    scope: 'feature_flag:read',
    otherOrg: () => `/api/projects/${f.teamB.id}/feature_flags/${flagB}/`,
  },
  {
    method: 'PATCH',
    path: () => `/api/projects/${f.teamA.id}/feature_flags/${flagB}/`,
    scope: 'feature_flag:write',
    otherOrg: () => `/api/projects/${f.teamB.id}/feature_flags/${flagB}/`,
    body: { name: 'x' },
  },
  {
    method: 'DELETE',
    path: () => `/api/projects/${f.teamA.id}/feature_flags/${flagB}/`,
    scope: 'feature_flag:write',
    otherOrg: () => `/api/projects/${f.teamB.id}/feature_flags/${flagB}/`,
  },
  {
    method: 'GET',
    path: () => `/api/projects/${f.teamA.id}/events/`,
    // PostHog's scope for its events endpoints (and the query API).
    scope: 'query:read',
    otherOrg: () => `/api/projects/${f.teamB.id}/events/`,
  },
  {
    method: 'GET',
    path: () => `/api/projects/${f.teamA.id}/persons/`,
    // The same scope as reading one person: a project:read key must not list everyone's emails.
    scope: 'person:read',
    otherOrg: () => `/api/projects/${f.teamB.id}/persons/`,
  },
  { method: 'GET', path: () => '/api/personal_api_keys/', scope: 'personal_api_key:read' },
  {
    method: 'POST',
    path: () => '/api/personal_api_keys/',
    scope: 'personal_api_key:write',
    body: { label: 'l', scopes: ['user:read'] },
  },
  { method: 'DELETE', path: () => '/api/personal_api_keys/doesnotexist/', scope: 'personal_api_key:write' },
];

describe.each(
  endpoints.map((e) => [`${e.method} ${e.path.toString().replace(/^\(\) => /, '')}`, e] as const),
)('%s', (_name, ep) => {
  test('401 without a key', async () => {
    const r = await call(h, ep.method, ep.path(), undefined, ep.body);
    expect(r.status).toBe(401);
    expect(r.body).toMatchObject({ type: 'authentication_error', code: 'not_authenticated', attr: null });
  });

  test('403 naming the missing scope', async () => {
    // A key holding every scope but the required one (and not its write twin).
    const [object] = ep.scope.split(':');
    const others = [
      'user:read',
      'user:write',
      'project:read',
      'early_access_feature:read',
      'early_access_feature:write',
      'feature_flag:read',
      'feature_flag:write',
      'personal_api_key:read',
      'personal_api_key:write',
    ].filter((s) => !s.startsWith(`${object}:`));
    const key = await createKey(h.prisma, f.alice.id, others);
    const r = await call(h, ep.method, ep.path(), key, ep.body);
    expect(r.status).toBe(403);
    expect(r.body).toEqual({
      type: 'authentication_error',
      code: 'permission_denied',
      detail: `API key missing required scope '${ep.scope}'`,
      attr: null,
    });
  });

  if (ep.otherOrg) {
    test('404 for another organization', async () => {
      const r = await call(h, ep.method, ep.otherOrg!(), allKeyA, ep.body);
      expect(r.status).toBe(404);
      expect(r.body).toMatchObject({ type: 'invalid_request', code: 'not_found' });
    });
  }
});

test('another organization resources are still there after the 404 attempts', async () => {
  expect(await h.prisma.earlyAccessFeature.count({ where: { id: eafB } })).toBe(1);
  expect((await h.prisma.featureFlag.findUniqueOrThrow({ where: { id: flagB } })).deleted).toBe(false);
  expect(await h.prisma.user.count({ where: { id: f.bob.id } })).toBe(1);
});

test.each([
  ['a project API key', `Bearer ${'phc_' + 'a'.repeat(43)}`],
  ['a malformed key', 'Bearer phx_short'],
  ['an unknown key', `Bearer phx_${'b'.repeat(47)}`],
  ['a non-bearer scheme', 'Basic abc'],
])('%s is 401', async (_name, header) => {
  const r = await call(h, 'GET', '/api/users/@me/', undefined, undefined, { authorization: header });
  expect(r.status).toBe(401);
  expect(r.body).toMatchObject({ type: 'authentication_error', code: 'authentication_failed' });
});

test('a write scope implies read and * holds everything', async () => {
  const key = await createKey(h.prisma, f.alice.id, ['user:write']);
  expect((await call(h, 'GET', '/api/users/@me/', key)).status).toBe(200);
  expect((await call(h, 'GET', '/api/projects/', allKeyA)).status).toBe(200);
});

test('operational endpoints and the public OpenAPI document', async () => {
  expect((await call(h, 'GET', '/_health')).status).toBe(200);
  expect((await call(h, 'GET', '/_ready')).body).toMatchObject({ status: 'ready' });
  const metrics = await fetch(`${h.url}/_metrics`);
  expect(await metrics.text()).toContain('management_throttled_requests_total');
  const schema = await call(h, 'GET', '/api/schema/');
  expect(schema.status).toBe(200);
  expect(schema.body.openapi).toBe('3.1.0');
  // The scope is in OpenAPI's own `security` (the hand-written document had `x-required-scope`).
  expect(schema.body.paths['/api/projects/{project_id}/early_access_feature/'].post.security).toEqual([
    { PersonalApiKey: ['early_access_feature:write'] },
  ]);
});
