// Local evaluation over real HTTP, Postgres and Redis: both paths, the body's shape (multivariate,
// payloads, groups, inactive flags; remote configuration and deleted flags left out; encrypted
// payloads redacted), ETag / If-None-Match, send_cohorts, every auth answer, and no Postgres
// query in the steady state.
import { randomUUID } from 'node:crypto';
import { redisKeys } from '@sett/cache';
import {
  generateKeyId,
  generatePersonalApiKey,
  generateProjectSecretKey,
  hashPersonalApiKey,
  hashProjectSecretKey,
} from '@sett/keys';
import { createProject, insertFlag, insertGroup, startHarness, type Harness, type Project } from './support';

let h: Harness;
let project: Project;
let other: Project;
const ids: Record<string, number> = {};
const keys = {} as Record<'reader' | 'writer' | 'noScope' | 'otherOrg' | 'inactive', string>;
const secretKey = () => generateProjectSecretKey();
const secret = secretKey();
const backup = secretKey();
const otherSecret = secretKey();

async function insertUserKey(organizationId: string, scopes: string[], active = true): Promise<string> {
  const { rows } = await h.pool.query<{ id: number }>(
    `INSERT INTO users (uuid, distinct_id, email, is_active) VALUES (gen_random_uuid(), $1, $2, $3) RETURNING id`,
    [randomUUID(), `${randomUUID()}@example.test`, active],
  );
  const userId = rows[0]!.id;
  await h.pool.query(
    'INSERT INTO organization_memberships (id, organization_id, user_id) VALUES (gen_random_uuid(), $1, $2)',
    [organizationId, userId],
  );
  const key = generatePersonalApiKey();
  await h.pool.query(
    `INSERT INTO personal_api_keys (id, user_id, label, secure_value, mask_value, scopes) VALUES ($1, $2, 'test', $3, 'phx_...', $4)`,
    [generateKeyId(), userId, hashPersonalApiKey(key), scopes],
  );
  return key;
}

const MULTIVARIATE_FILTERS = {
  groups: [
    {
      properties: [{ key: 'email', type: 'person', operator: 'icontains', value: '@example.com' }],
      rollout_percentage: 100,
    },
    { properties: [], rollout_percentage: 50, variant: 'test' },
  ],
  multivariate: {
    variants: [
      { key: 'control', name: 'Control', rollout_percentage: 50 },
      { key: 'test', name: 'Test', rollout_percentage: 50 },
    ],
  },
  payloads: { control: '{"color":"blue"}', test: '{"color":"red"}' },
};
const GROUP_FILTERS = {
  aggregation_group_type_index: 0,
  groups: [
    {
      properties: [
        { key: 'plan', type: 'group', group_type_index: 0, operator: 'exact', value: ['enterprise'] },
      ],
      rollout_percentage: 100,
    },
  ],
  payloads: { true: '{"seats":50}' },
};

beforeAll(async () => {
  h = await startHarness();
  project = await createProject(h);
  other = await createProject(h);
  await insertGroup(h.pool, project.teamId, 'company', 0, 'acme', { plan: 'enterprise' });
  ids.multivariate = await insertFlag(h.pool, project.teamId, {
    key: 'checkout-experiment',
    name: 'Checkout experiment',
    filters: MULTIVARIATE_FILTERS,
    ensure_experience_continuity: true,
    version: 3,
  });
  ids.group = await insertFlag(h.pool, project.teamId, { key: 'enterprise-seats', filters: GROUP_FILTERS });
  ids.inactive = await insertFlag(h.pool, project.teamId, {
    key: 'paused',
    active: false,
    filters: { groups: [{ properties: [], rollout_percentage: 100 }] },
  });
  await insertFlag(h.pool, project.teamId, { key: 'gone', deleted: true, filters: { groups: [] } });
  const { rows } = await h.pool.query<{ id: number }>(
    `INSERT INTO feature_flags (team_id, key, filters, is_remote_configuration, has_encrypted_payloads)
     VALUES ($1, 'remote-settings', $2, true, true), ($1, 'sealed', $3, false, true) RETURNING id`,
    [
      project.teamId,
      JSON.stringify({ groups: [{ rollout_percentage: 100 }], payloads: { true: 'v1:aaaa:bbbb:cccc' } }),
      JSON.stringify({ groups: [{ rollout_percentage: 100 }], payloads: { true: 'v1:dddd:eeee:ffff' } }),
    ],
  );
  ids.sealed = rows[1]!.id;
  await h.pool.query(
    'UPDATE teams SET secret_api_token_hash = $1, secret_api_token_backup_hash = $2 WHERE id = $3',
    [hashProjectSecretKey(secret), hashProjectSecretKey(backup), project.teamId],
  );
  await h.pool.query('UPDATE teams SET secret_api_token_hash = $1 WHERE id = $2', [
    hashProjectSecretKey(otherSecret),
    other.teamId,
  ]);
  keys.reader = await insertUserKey(project.organizationId, ['feature_flag:read']);
  keys.writer = await insertUserKey(project.organizationId, ['feature_flag:write']);
  keys.noScope = await insertUserKey(project.organizationId, ['user:read', 'project:read']);
  keys.otherOrg = await insertUserKey(other.organizationId, ['*']);
  keys.inactive = await insertUserKey(project.organizationId, ['*'], false);
});

afterAll(async () => {
  await h?.stop();
});

async function get(path: string, key?: string, headers: Record<string, string> = {}) {
  const res = await fetch(h.url + path, {
    headers: { ...(key ? { authorization: `Bearer ${key}` } : {}), ...headers },
  });
  const text = await res.text();
  return { status: res.status, text, body: text ? JSON.parse(text) : undefined, headers: res.headers };
}
const definitions = (token = project.token, extra = '') => `/flags/definitions?token=${token}${extra}`;

describe('the body', () => {
  it('is PostHog local evaluation shape on both paths, with and without the trailing slash', async () => {
    const res = await get(definitions(project.token, '&send_cohorts'), keys.reader);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    expect(res.body.group_type_mapping).toEqual({ '0': 'company' });
    expect(res.body.cohorts).toEqual({});
    // Stored order; remote configuration and deleted flags left out; inactive flags sent.
    expect(res.body.flags.map((f: { key: string }) => f.key)).toEqual([
      'checkout-experiment',
      'enterprise-seats',
      'paused',
      'sealed',
    ]);
    expect(res.body.flags[0]).toEqual({
      id: ids.multivariate,
      team_id: project.teamId,
      name: 'Checkout experiment',
      key: 'checkout-experiment',
      filters: MULTIVARIATE_FILTERS,
      deleted: false,
      active: true,
      ensure_experience_continuity: true,
      has_encrypted_payloads: false,
      version: 3,
      evaluation_runtime: 'all',
      evaluation_tags: [],
    });
    expect(res.body.flags[1]).toMatchObject({ id: ids.group, filters: GROUP_FILTERS });
    expect(res.body.flags[2]).toMatchObject({ id: ids.inactive, active: false });
    // Encrypted payloads never leave management: redacted as PostHog shows them.
    expect(res.body.flags[3]).toMatchObject({
      id: ids.sealed,
      has_encrypted_payloads: true,
      filters: { payloads: { true: '"********* (encrypted)"' } },
    });
    expect(res.text).not.toContain('remote-settings');

    for (const path of [
      definitions(),
      `/flags/definitions/?token=${project.token}`,
      `/api/feature_flag/local_evaluation/?token=${project.token}&send_cohorts`,
      `/api/feature_flag/local_evaluation?token=${project.token}`,
    ]) {
      const again = await get(path, keys.reader);
      expect(again.status).toBe(200);
      expect(again.body).toEqual(res.body);
      expect(again.headers.get('etag')).toBe(res.headers.get('etag'));
    }
  });

  it('follows the flag list: a changed flag changes the body and its ETag', async () => {
    const before = await get(definitions(), keys.reader);
    await h.pool.query(`UPDATE feature_flags SET version = version + 1, name = 'Renamed' WHERE id = $1`, [
      ids.inactive,
    ]);
    await h.redis.del(redisKeys.flags(project.teamId));
    const after = await get(definitions(), keys.reader);
    expect(after.status).toBe(200);
    expect(after.headers.get('etag')).not.toBe(before.headers.get('etag'));
    expect(after.body.flags[2]).toMatchObject({ name: 'Renamed', version: 2 });
    const stale = await get(definitions(), keys.reader, { 'if-none-match': before.headers.get('etag')! });
    expect(stale.status).toBe(200);
    expect(stale.body.flags[2].name).toBe('Renamed');
  });
});

describe('ETag', () => {
  it('answers If-None-Match with 304 and no body, also weak and in a list', async () => {
    const first = await get(definitions(), keys.reader);
    const etag = first.headers.get('etag')!;
    expect(etag).toMatch(/^"[A-Za-z0-9_-]+"$/);
    for (const header of [etag, `W/${etag}`, `"nope", ${etag}`, '*']) {
      const res = await get(definitions(), keys.reader, { 'if-none-match': header });
      expect(res.status).toBe(304);
      expect(res.text).toBe('');
      expect(res.headers.get('etag')).toBe(etag);
    }
    const other = await get(definitions(), keys.reader, { 'if-none-match': '"something-else"' });
    expect(other.status).toBe(200);
  });

  it('checks the key before answering 304', async () => {
    const etag = (await get(definitions(), keys.reader)).headers.get('etag')!;
    expect((await get(definitions(), generatePersonalApiKey(), { 'if-none-match': etag })).status).toBe(401);
    expect((await get(definitions(), keys.otherOrg, { 'if-none-match': etag })).status).toBe(403);
  });
});

describe('auth', () => {
  it('accepts the project secret key and its backup, with or without the token', async () => {
    for (const key of [secret, backup]) {
      const res = await get(definitions(), key);
      expect(res.status).toBe(200);
      expect(res.body.flags).toHaveLength(4);
    }
    const noToken = await get('/api/feature_flag/local_evaluation/', secret);
    expect(noToken.status).toBe(200);
    expect(noToken.body.flags).toHaveLength(4);
    // A write scope includes read.
    expect((await get(definitions(), keys.writer)).status).toBe(200);
  });

  it('401 for missing, malformed and unknown keys and tokens, in PostHog JSON', async () => {
    const missing = await get(definitions());
    expect(missing.status).toBe(401);
    expect(missing.body).toMatchObject({ type: 'authentication_error', code: 'not_authenticated' });
    for (const key of [generatePersonalApiKey(), secretKey(), project.token, 'phx_short', keys.inactive]) {
      const res = await get(definitions(), key);
      expect(res.status).toBe(401);
      expect(res.body.type).toBe('authentication_error');
    }
    expect((await get(definitions(), keys.reader, { authorization: `Basic ${keys.reader}` })).status).toBe(
      401,
    );
    const unknownToken = await get(definitions('phc_doesnotexist'), keys.reader);
    expect(unknownToken.status).toBe(401);
    expect(unknownToken.body.code).toBe('invalid_api_key');
    expect((await get(definitions('bad%00token'), keys.reader)).status).toBe(401);
  });

  it('403 for a key without feature_flag:read, another organization, or another project secret key', async () => {
    const scope = await get(definitions(), keys.noScope);
    expect(scope.status).toBe(403);
    expect(scope.body).toMatchObject({ type: 'authentication_error', code: 'permission_denied' });
    expect(scope.body.detail).toContain('feature_flag:read');
    expect((await get(definitions(), keys.otherOrg)).status).toBe(403);
    expect((await get(definitions(), otherSecret)).status).toBe(403);
    expect((await get(definitions(other.token), secret)).status).toBe(403);
  });

  it('400 without a token for a personal key; 405 for other methods', async () => {
    const res = await get('/flags/definitions', keys.reader);
    expect(res.status).toBe(400);
    expect(res.body.attr).toBe('token');
    const post = await fetch(`${h.url}${definitions()}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${keys.reader}` },
    });
    expect(post.status).toBe(405);
  });
});

describe('CORS', () => {
  // A server-to-server read authenticated by a secret: like management, it sends no CORS
  // headers, on its answers and its errors alike, so a web page cannot read either.
  it('no answer carries CORS headers: 200, 304, 401, 403, 405, preflights', async () => {
    const origin = { origin: 'https://evil.example' };
    const ok = await get(definitions(), keys.reader, origin);
    const notModified = await get(definitions(), keys.reader, {
      ...origin,
      'if-none-match': ok.headers.get('etag')!,
    });
    const unknown = await get(definitions(), `phx_${'x'.repeat(40)}`, origin);
    const forbidden = await get(definitions(), keys.noScope, origin);
    const method = await fetch(`${h.url}${definitions()}`, { method: 'POST', headers: origin });
    // A preflight must not allow what the answer then refuses to share.
    const preflight = await fetch(`${h.url}${definitions()}`, {
      method: 'OPTIONS',
      headers: {
        ...origin,
        'access-control-request-method': 'GET',
        'access-control-request-headers': 'authorization',
      },
    });
    const statuses = [ok, notModified, unknown, forbidden].map((r) => r.status);
    expect([...statuses, method.status]).toEqual([200, 304, 401, 403, 405]);
    for (const res of [ok, notModified, unknown, forbidden, method, preflight]) {
      const cors = [...res.headers.keys()].filter((k) => k.startsWith('access-control-'));
      expect(cors).toEqual([]);
    }
  });
});

it('steady state: polling costs no Postgres query', async () => {
  await get(definitions(), keys.reader);
  await get(definitions(), secret);
  const original = h.pool.query.bind(h.pool);
  let queries = 0;
  (h.pool as { query: unknown }).query = (...args: unknown[]) => {
    queries++;
    return (original as (...a: unknown[]) => unknown)(...args);
  };
  try {
    const etag = (await get(definitions(), keys.reader)).headers.get('etag')!;
    const answers = await Promise.all(
      Array.from({ length: 30 }, (_, i) =>
        get(definitions(), i % 2 ? secret : keys.reader, i % 3 ? { 'if-none-match': etag } : {}),
      ),
    );
    expect(answers.map((a) => a.status).sort()).toEqual([...Array(10).fill(200), ...Array(20).fill(304)]);
  } finally {
    (h.pool as { query: unknown }).query = original;
  }
  expect(queries).toBe(0);
});
