// Remote configuration flags and encrypted payloads: stored encrypted, left out of decide's flag
// list, decrypted only through .../feature_flags/<key>/remote_config with a personal key
// (feature_flag:read) or the project secret key (phs_, current or backup); `@current` on the
// other /api/projects/ routes.
import { decodeFlagList, redisKeys } from '@sett/cache';
import type { FlagDefinition } from '@sett/flags';
import { generateProjectSecretKey, hashProjectSecretKey } from '@sett/keys';
import { call, createKey, seed, startHarness, type Fixture, type Harness } from './helpers';

let h: Harness;
let f: Fixture;
let writer: string;
let reader: string;
let noScope: string;
let bobKey: string;
let secret: string;
let backup: string;

const SECRET_PAYLOAD = '{"api_url":"https://internal.example","token":"s3cr3t-remote-value"}';
const secretKey = () => generateProjectSecretKey();
const remoteConfigPath = (project: string | number, flag: string, token?: string) =>
  `/api/projects/${project}/feature_flags/${flag}/remote_config${token ? `?token=${encodeURIComponent(token)}` : ''}`;

beforeAll(async () => {
  h = await startHarness();
  f = await seed(h.prisma);
  writer = await createKey(h.prisma, f.alice.id, ['feature_flag:write']);
  reader = await createKey(h.prisma, f.adminA.id, ['feature_flag:read']);
  noScope = await createKey(h.prisma, f.alice.id, ['user:read']);
  bobKey = await createKey(h.prisma, f.bob.id, ['*']);
  // Inserted straight into the row, as the rotation API stores it: the hash only.
  secret = secretKey();
  backup = secretKey();
  await h.prisma.team.update({
    where: { id: f.teamA.id },
    data: {
      secretApiTokenHash: hashProjectSecretKey(secret),
      secretApiTokenBackupHash: hashProjectSecretKey(backup),
    },
  });
  await h.prisma.team.update({
    where: { id: f.teamB.id },
    data: { secretApiTokenHash: hashProjectSecretKey((bobSecret = secretKey())) },
  });

  const created = await call(h, 'POST', `/api/projects/${f.teamA.id}/feature_flags/`, writer, {
    key: 'service-config',
    name: 'Service config',
    is_remote_configuration: true,
    has_encrypted_payloads: true,
    filters: { groups: [{ properties: [], rollout_percentage: 100 }], payloads: { true: SECRET_PAYLOAD } },
  });
  expect(created.status).toBe(201);
  const plain = await call(h, 'POST', `/api/projects/${f.teamA.id}/feature_flags/`, writer, {
    key: 'plain-config',
    is_remote_configuration: true,
    filters: { groups: [{ properties: [], rollout_percentage: 100 }], payloads: { true: '{"a":1}' } },
  });
  expect(plain.status).toBe(201);
  const ordinary = await call(h, 'POST', `/api/projects/${f.teamA.id}/feature_flags/`, writer, {
    key: 'ordinary',
    filters: { groups: [{ properties: [], rollout_percentage: 100 }], payloads: { true: '{"b":2}' } },
  });
  expect(ordinary.status).toBe(201);
});
afterAll(() => h?.stop());

let bobSecret: string;

test('create answers the PostHog fields, payload shown decrypted to the personal key', async () => {
  const list = await call(h, 'GET', `/api/projects/${f.teamA.id}/feature_flags/`, reader);
  const flag = list.body.results.find((x: { key: string }) => x.key === 'service-config');
  expect(flag).toMatchObject({
    is_remote_configuration: true,
    has_encrypted_payloads: true,
    filters: { payloads: { true: SECRET_PAYLOAD } },
  });
});

test('the payload is encrypted at rest and never reaches decide', async () => {
  const { rows } = await h.pool.query<{ filters: unknown; has_encrypted_payloads: boolean }>(
    `SELECT filters, has_encrypted_payloads FROM feature_flags WHERE team_id = $1 AND key = 'service-config'`,
    [f.teamA.id],
  );
  expect(rows[0]!.has_encrypted_payloads).toBe(true);
  const stored = JSON.stringify(rows[0]!.filters);
  expect(stored).not.toContain('s3cr3t-remote-value');
  expect(stored).not.toContain('internal.example');
  expect((rows[0]!.filters as { payloads: { true: string } }).payloads.true).toMatch(/^v1:/);

  const list = decodeFlagList<FlagDefinition>(await h.redis.get(redisKeys.flags(f.teamA.id)));
  expect(list!.flags.map((x) => x.key)).toEqual(['ordinary']);
});

test('remote_config decrypts for a personal key with feature_flag:read, by key, id and @current', async () => {
  const byKey = await call(h, 'GET', remoteConfigPath(f.teamA.id, 'service-config'), reader);
  expect(byKey.status).toBe(200);
  // A JSON string holding the payload's JSON: what posthog-node parses twice.
  expect(byKey.body).toBe(SECRET_PAYLOAD);

  const { rows } = await h.pool.query<{ id: number }>(
    `SELECT id FROM feature_flags WHERE key = 'service-config' AND team_id = $1`,
    [f.teamA.id],
  );
  const byId = await call(h, 'GET', `${remoteConfigPath(f.teamA.id, String(rows[0]!.id))}/`, reader);
  expect(byId.body).toBe(SECRET_PAYLOAD);

  // What posthog-node requests: @current plus the project token.
  const sdk = await call(h, 'GET', remoteConfigPath('@current', 'service-config', f.teamA.apiToken), reader);
  expect(sdk.status).toBe(200);
  expect(JSON.parse(sdk.body as string)).toEqual(JSON.parse(SECRET_PAYLOAD));
  const noToken = await call(h, 'GET', remoteConfigPath('@current', 'service-config'), reader);
  expect(noToken.body).toBe(SECRET_PAYLOAD);

  const plain = await call(h, 'GET', remoteConfigPath('@current', 'plain-config', f.teamA.apiToken), reader);
  expect(plain.body).toBe('{"a":1}');
});

test('remote_config decrypts for the project secret key and its backup', async () => {
  for (const k of [secret, backup]) {
    const r = await call(h, 'GET', remoteConfigPath('@current', 'service-config', f.teamA.apiToken), k);
    expect(r.status).toBe(200);
    expect(r.body).toBe(SECRET_PAYLOAD);
  }
  const byId = await call(h, 'GET', remoteConfigPath(f.teamA.id, 'service-config'), secret);
  expect(byId.body).toBe(SECRET_PAYLOAD);
});

test('remote_config refusals: 401 unknown keys, 403 scope or token of another project, 404 others', async () => {
  const path = remoteConfigPath('@current', 'service-config', f.teamA.apiToken);
  expect((await call(h, 'GET', path)).status).toBe(401);
  expect((await call(h, 'GET', path, secretKey())).status).toBe(401);
  expect((await call(h, 'GET', path, 'phs_short')).status).toBe(401);
  expect((await call(h, 'GET', path, f.teamA.apiToken)).status).toBe(401);
  const scope = await call(h, 'GET', path, noScope);
  expect(scope.status).toBe(403);
  expect(scope.body).toMatchObject({ type: 'authentication_error', code: 'permission_denied' });
  // Another project's secret key with this project's token.
  expect((await call(h, 'GET', path, bobSecret)).status).toBe(403);
  // Another organization's user: the project is not confirmed to exist.
  expect((await call(h, 'GET', path, bobKey)).status).toBe(404);
  expect((await call(h, 'GET', remoteConfigPath(f.teamA.id, 'service-config'), bobKey)).status).toBe(404);
  expect((await call(h, 'GET', remoteConfigPath(f.teamA.id, 'service-config'), bobSecret)).status).toBe(404);
  // Not a remote configuration flag, or no such flag.
  expect((await call(h, 'GET', remoteConfigPath(f.teamA.id, 'ordinary'), reader)).status).toBe(404);
  expect((await call(h, 'GET', remoteConfigPath(f.teamA.id, 'missing'), reader)).status).toBe(404);
  // The secret key works on remote_config only.
  expect((await call(h, 'GET', `/api/projects/${f.teamA.id}/feature_flags/`, secret)).status).toBe(401);
});

test('toggling encryption re-stores the payloads; a rename keeps them encrypted', async () => {
  const { rows } = await h.pool.query<{ id: number }>(
    `SELECT id FROM feature_flags WHERE key = 'plain-config' AND team_id = $1`,
    [f.teamA.id],
  );
  const path = `/api/projects/${f.teamA.id}/feature_flags/${rows[0]!.id}/`;
  const on = await call(h, 'PATCH', path, writer, { has_encrypted_payloads: true });
  expect(on.status).toBe(200);
  expect(on.body.filters.payloads).toEqual({ true: '{"a":1}' });
  const stored = async () =>
    (await h.pool.query(`SELECT filters FROM feature_flags WHERE id = $1`, [rows[0]!.id])).rows[0].filters;
  expect((await stored()).payloads.true).toMatch(/^v1:/);
  const renamed = await call(h, 'PATCH', path, writer, { key: 'plain-config-2' });
  expect(renamed.body.filters.payloads).toEqual({ true: '{"a":1}' });
  expect((await stored()).payloads.true).toMatch(/^v1:/);
  expect((await call(h, 'GET', remoteConfigPath('@current', 'plain-config-2'), secret)).body).toBe('{"a":1}');
  const off = await call(h, 'PATCH', path, writer, {
    has_encrypted_payloads: false,
    is_remote_configuration: false,
  });
  expect(off.body).toMatchObject({ has_encrypted_payloads: false, is_remote_configuration: false });
  expect((await stored()).payloads.true).toBe('{"a":1}');
  const list = decodeFlagList<FlagDefinition>(await h.redis.get(redisKeys.flags(f.teamA.id)));
  expect(list!.flags.map((x) => x.key).sort()).toEqual(['ordinary', 'plain-config-2']);
});

test('@current names the user current project on the other /api/projects/ routes', async () => {
  const project = await call(
    h,
    'GET',
    '/api/projects/@current/',
    await createKey(h.prisma, f.alice.id, ['*']),
  );
  expect(project.status).toBe(200);
  expect(project.body.id).toBe(f.teamA.id);
  const flags = await call(h, 'GET', '/api/projects/@current/feature_flags/', reader);
  expect(flags.status).toBe(200);
  expect(flags.body.results.map((x: { key: string }) => x.key)).toContain('ordinary');
  const bobFlags = await call(h, 'GET', '/api/projects/@current/feature_flags/', bobKey);
  expect(bobFlags.body.count).toBe(0);
  // Writes too.
  const created = await call(h, 'POST', '/api/projects/@current/feature_flags/', writer, {
    key: 'via-current',
  });
  expect(created.status).toBe(201);
  expect(created.body.team_id).toBe(f.teamA.id);
  // A current project the user cannot reach any more falls back to the first one they can.
  await h.prisma.user.update({ where: { id: f.bob.id }, data: { currentTeamId: f.teamA.id } });
  const fallback = await call(
    h,
    'GET',
    '/api/projects/@current/',
    await createKey(h.prisma, f.bob.id, ['*']),
  );
  expect(fallback.body.id).toBe(f.teamB.id);
});
