// The decide service over real HTTP, Postgres and Redis: encodings, auth, response shapes,
// flag sources, stored properties, groups, enrollment, continuity, quota, GeoIP, errors.
import { gzipSync } from 'node:zlib';
import LZString from 'lz-string';
import { redisKeys, writeFlagList } from '@sett/cache';
import { matchingVariant } from '@sett/flags';
import { openGeoIp } from '@sett/geoip';
import {
  createProject,
  insertFlag,
  insertGroup,
  insertPerson,
  post,
  startHarness,
  type Harness,
  type Project,
  type Reply,
} from './support';

let h: Harness;
let project: Project;

beforeAll(async () => {
  h = await startHarness({ geoip: await openGeoIp(), config: { trustedProxyHops: 1 } });
  project = await createProject(h);
  await insertFlag(h.pool, project.teamId, {
    key: 'everyone',
    name: 'Everyone',
    filters: {
      groups: [{ properties: [], rollout_percentage: 100 }],
      payloads: { true: '{"color":"blue"}' },
    },
  });
  await insertFlag(h.pool, project.teamId, {
    key: 'nobody',
    filters: { groups: [{ properties: [], rollout_percentage: 0 }] },
  });
  await insertFlag(h.pool, project.teamId, {
    key: 'multivariate-flag',
    filters: {
      groups: [{ properties: [], rollout_percentage: 55 }],
      multivariate: {
        variants: [
          { key: 'first-variant', rollout_percentage: 50 },
          { key: 'second-variant', rollout_percentage: 20 },
          { key: 'third-variant', rollout_percentage: 20 },
          { key: 'fourth-variant', rollout_percentage: 5 },
          { key: 'fifth-variant', rollout_percentage: 5 },
        ],
      },
    },
  });
  await insertFlag(h.pool, project.teamId, {
    key: 'simple-flag',
    filters: { groups: [{ properties: [], rollout_percentage: 45 }] },
  });
  await insertFlag(h.pool, project.teamId, {
    key: 'inactive',
    active: false,
    filters: { groups: [{ rollout_percentage: 100 }] },
  });
  await insertFlag(h.pool, project.teamId, {
    key: 'deleted',
    deleted: true,
    filters: { groups: [{ rollout_percentage: 100 }] },
  });
});

afterAll(async () => {
  await h?.stop();
});

const body = (extra: Record<string, unknown> = {}) => ({
  api_key: project.token,
  distinct_id: 'user-1',
  ...extra,
});

describe('flags created in the database, evaluated through decide?v=4', () => {
  it('answers with PostHog bucketing (PostHog consistency vectors for distinct_id_0..9)', async () => {
    const simple = '0110100101';
    const multivariate = ['second', 'second', 'first', false, false, 'second', 'first', false, false, false];
    for (let i = 0; i < 10; i++) {
      const res = await post(h.url, '/decide/?v=4', body({ distinct_id: `distinct_id_${i}` }));
      expect(res.status).toBe(200);
      expect(res.body.flags['simple-flag'].enabled).toBe(simple[i] === '1');
      const want = multivariate[i];
      expect(res.body.flags['multivariate-flag'].enabled).toBe(want !== false);
      expect(res.body.flags['multivariate-flag'].variant).toBe(want === false ? null : `${want}-variant`);
    }
  });

  it('has exactly the v4 shape of docs/interface.md, Flag evaluation', async () => {
    const res = await post(h.url, '/decide?v=4', body({ distinct_id: 'distinct_id_0' }));
    expect(res.headers.get('content-type')).toMatch(/application\/json/);
    expect(res.body).toEqual({
      config: { enable_collect_everything: true },
      toolbarParams: {},
      errorsWhileComputingFlags: false,
      isAuthenticated: false,
      supportedCompression: ['gzip', 'lz64'],
      flags: {
        everyone: {
          key: 'everyone',
          enabled: true,
          variant: null,
          reason: { code: 'condition_match', condition_index: 0, description: 'Matched condition set 1' },
          metadata: {
            id: expect.any(Number),
            version: 1,
            description: 'Everyone',
            payload: '{"color":"blue"}',
          },
        },
        nobody: {
          key: 'nobody',
          enabled: false,
          variant: null,
          reason: { code: 'out_of_rollout_bound', condition_index: 0, description: 'Out of rollout bound' },
          metadata: { id: expect.any(Number), version: 1, description: null },
        },
        'multivariate-flag': {
          key: 'multivariate-flag',
          enabled: true,
          variant: 'second-variant',
          reason: { code: 'condition_match', condition_index: 0, description: 'Matched condition set 1' },
          metadata: { id: expect.any(Number), version: 1, description: null },
        },
        'simple-flag': {
          key: 'simple-flag',
          enabled: false,
          variant: null,
          reason: { code: 'out_of_rollout_bound', condition_index: 0, description: 'Out of rollout bound' },
          metadata: { id: expect.any(Number), version: 1, description: null },
        },
      },
      requestId: expect.stringMatching(
        /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/,
      ),
      evaluatedAt: expect.any(Number),
    });
  });

  it('answers v3, v2, v1 and /flags v2 in their shapes, with or without a trailing slash', async () => {
    const v3 = await post(h.url, '/decide/?v=3', body({ distinct_id: 'distinct_id_0' }));
    expect(v3.body.featureFlags).toEqual({
      everyone: true,
      nobody: false,
      'multivariate-flag': 'second-variant',
      'simple-flag': false,
    });
    expect(v3.body.featureFlagPayloads).toEqual({ everyone: '{"color":"blue"}' });
    expect(v3.body).not.toHaveProperty('flags');
    const v2 = await post(h.url, '/decide?v=2', body({ distinct_id: 'distinct_id_0' }));
    expect(v2.body.featureFlags).toEqual({ everyone: true, 'multivariate-flag': 'second-variant' });
    const v1 = await post(h.url, '/decide/', body({ distinct_id: 'distinct_id_0' }));
    expect(v1.body.featureFlags.sort()).toEqual(['everyone', 'multivariate-flag']);
    const v4 = await post(h.url, '/decide/?v=4', body({ distinct_id: 'distinct_id_0' }));
    for (const path of ['/flags?v=2', '/flags/?v=2']) {
      const flags = await post(h.url, path, body({ distinct_id: 'distinct_id_0' }));
      expect(flags.status).toBe(200);
      expect(flags.body.flags).toEqual(v4.body.flags);
    }
  });
});

describe('request bodies', () => {
  const expectEveryone = (res: Reply) => {
    expect(res.status).toBe(200);
    expect(res.body.flags.everyone.enabled).toBe(true);
  };
  const json = () => JSON.stringify(body());

  it('accepts JSON, token instead of api_key, and a numeric distinct_id', async () => {
    expectEveryone(await post(h.url, '/decide/?v=4', body()));
    expectEveryone(await post(h.url, '/decide/?v=4', { token: project.token, distinct_id: 42 }));
  });

  it('accepts gzip by Content-Encoding and by ?compression=gzip-js', async () => {
    expectEveryone(
      await post(h.url, '/decide/?v=4', gzipSync(json()), {
        'content-encoding': 'gzip',
        'content-type': 'application/json',
      }),
    );
    expectEveryone(
      await post(h.url, '/decide/?v=4&compression=gzip-js', gzipSync(json()), {
        'content-type': 'text/plain',
      }),
    );
  });

  it('accepts base64 and lz64 in a data= form field', async () => {
    const form = { 'content-type': 'application/x-www-form-urlencoded' };
    const b64 = Buffer.from(json()).toString('base64');
    expectEveryone(
      await post(h.url, '/decide/?v=4&compression=base64', `data=${encodeURIComponent(b64)}`, form),
    );
    const lz = LZString.compressToBase64(json());
    expectEveryone(
      await post(h.url, '/decide/?v=4&compression=lz64', `data=${encodeURIComponent(lz)}`, form),
    );
  });

  it('refuses a malformed body with 400 and an oversized one with 413', async () => {
    const bad = await post(h.url, '/decide/?v=4', '{oops', { 'content-type': 'application/json' });
    expect(bad.status).toBe(400);
    expect(bad.body).toMatchObject({ type: 'validation_error', code: 'invalid_payload' });
    const big = await post(
      h.url,
      '/decide/?v=4',
      JSON.stringify(body({ person_properties: { blob: 'x'.repeat(1100 * 1024) } })),
      {
        'content-type': 'application/json',
      },
    );
    expect(big.status).toBe(413);
  });

  it('answers CORS preflights and echoes the origin, without credentials (decide reads no cookies)', async () => {
    const pre = await fetch(`${h.url}/decide/?v=4`, {
      method: 'OPTIONS',
      headers: { origin: 'https://app.example.com', 'access-control-request-headers': 'content-type' },
    });
    expect(pre.status).toBe(204);
    expect(pre.headers.get('access-control-allow-origin')).toBe('https://app.example.com');
    expect(pre.headers.get('access-control-allow-methods')).toContain('POST');
    const res = await post(h.url, '/decide/?v=4', body(), { origin: 'https://app.example.com' });
    expect(res.headers.get('access-control-allow-origin')).toBe('https://app.example.com');
    expect(pre.headers.get('access-control-allow-credentials')).toBeNull();
    expect(res.headers.get('access-control-allow-credentials')).toBeNull();
  });
});

describe('authentication and validation', () => {
  it('401 without a key and with an unknown key, PostHog style', async () => {
    for (const b of [{ distinct_id: 'u' }, { api_key: 'phc_unknown', distinct_id: 'u' }]) {
      const res = await post(h.url, '/decide/?v=4', b);
      expect(res.status).toBe(401);
      expect(res.body).toEqual({
        type: 'authentication_error',
        code: 'invalid_api_key',
        detail: expect.any(String),
        attr: null,
      });
    }
  });

  it('400 without a distinct_id', async () => {
    for (const b of [{ api_key: project.token }, { api_key: project.token, distinct_id: '' }]) {
      const res = await post(h.url, '/decide/?v=4', b);
      expect(res.status).toBe(400);
      expect(res.body).toMatchObject({ type: 'validation_error', attr: 'distinct_id' });
    }
  });

  it('405 for other methods', async () => {
    const res = await fetch(`${h.url}/decide/?v=4`);
    expect(res.status).toBe(405);
  });
});

describe('flag definitions: Redis, Postgres, invalidation', () => {
  it('loads from Postgres on a Redis miss and writes the list back', async () => {
    const p = await createProject(h);
    await insertFlag(h.pool, p.teamId, {
      key: 'from-db',
      filters: { groups: [{ rollout_percentage: 100 }] },
    });
    expect(await h.redis.get(redisKeys.flags(p.teamId))).toBeNull();
    const res = await post(h.url, '/decide/?v=4', { api_key: p.token, distinct_id: 'x' });
    expect(res.body.flags['from-db'].enabled).toBe(true);
    const stored = JSON.parse((await h.redis.get(redisKeys.flags(p.teamId)))!);
    expect(stored.flags.map((f: { key: string }) => f.key)).toEqual(['from-db']);
    expect(await h.redis.get(redisKeys.groupTypes(p.teamId))).toBe('{}');
  });

  it('uses the list in Redis (what management writes) over Postgres', async () => {
    const p = await createProject(h);
    await insertFlag(h.pool, p.teamId, {
      key: 'only-in-db',
      filters: { groups: [{ rollout_percentage: 100 }] },
    });
    await writeFlagList(h.redis, {
      teamId: p.teamId,
      updatedAt: Date.now(),
      flags: [
        {
          id: 99,
          team_id: p.teamId,
          key: 'from-redis',
          filters: { groups: [{ rollout_percentage: 100 }] },
          active: true,
          deleted: false,
          version: 3,
        },
      ],
    });
    await h.redis.set(redisKeys.groupTypes(p.teamId), '{}');
    const res = await post(h.url, '/decide/?v=4', { api_key: p.token, distinct_id: 'x' });
    expect(Object.keys(res.body.flags)).toEqual(['from-redis']);
    expect(res.body.flags['from-redis'].metadata).toEqual({
      id: 99,
      version: 3,
      description: null,
    });
    expect(res.body.flags['from-redis'].metadata).not.toHaveProperty('payload');
  });

  it('drops its in-process copy when the flags-changed channel names the project', async () => {
    const cached = await startHarness({ db: h.db, subscribe: true, config: { flagCacheTtlMs: 600_000 } });
    try {
      const p = await createProject(cached);
      const write = (key: string) =>
        writeFlagList(cached.redis, {
          teamId: p.teamId,
          updatedAt: Date.now(),
          flags: [{ id: 1, key, filters: { groups: [{ rollout_percentage: 100 }] } }],
        });
      await cached.redis.set(redisKeys.groupTypes(p.teamId), '{}');
      await write('first');
      const ask = async () =>
        Object.keys(
          (await post(cached.url, '/decide/?v=4', { api_key: p.token, distinct_id: 'x' })).body.flags,
        );
      expect(await ask()).toEqual(['first']);
      // Without a publish the cache holds (TTL ten minutes): a silent overwrite is not seen.
      await cached.redis.set(
        redisKeys.flags(p.teamId),
        JSON.stringify({ team_id: p.teamId, updated_at: 1, flags: [{ id: 2, key: 'silent', filters: {} }] }),
      );
      expect(await ask()).toEqual(['first']);
      await write('second');
      let keys: string[] = [];
      for (let i = 0; i < 50 && keys[0] !== 'second'; i++) {
        keys = await ask();
        if (keys[0] !== 'second') await new Promise((r) => setTimeout(r, 20));
      }
      expect(keys).toEqual(['second']);
    } finally {
      await cached.stop();
    }
  });
});

describe('stored person properties', () => {
  let p: Project;
  beforeAll(async () => {
    p = await createProject(h);
    await insertFlag(h.pool, p.teamId, {
      key: 'example-emails',
      filters: {
        groups: [
          {
            properties: [{ key: 'email', type: 'person', operator: 'icontains', value: '@example.com' }],
            rollout_percentage: 100,
          },
        ],
      },
    });
    await insertPerson(h.pool, p.teamId, ['stored-1'], { email: 'someone@example.com' });
  });

  it('reads them when the request does not give the property', async () => {
    const before = h.decide.personStore.stats().personQueries;
    const res = await post(h.url, '/decide/?v=4', { api_key: p.token, distinct_id: 'stored-1' });
    expect(res.body.flags['example-emails'].enabled).toBe(true);
    expect(h.decide.personStore.stats().personQueries).toBe(before + 1);
    const unknown = await post(h.url, '/decide/?v=4', { api_key: p.token, distinct_id: 'nobody-here' });
    expect(unknown.body.flags['example-emails']).toMatchObject({
      enabled: false,
      reason: { code: 'no_condition_match' },
    });
  });

  it('does not query them when the request gives the property (and the request wins)', async () => {
    const before = h.decide.personStore.stats().personQueries;
    const res = await post(h.url, '/decide/?v=4', {
      api_key: p.token,
      distinct_id: 'stored-1',
      person_properties: { email: 'x@other.org' },
    });
    expect(res.body.flags['example-emails'].enabled).toBe(false);
    expect(h.decide.personStore.stats().personQueries).toBe(before);
  });

  it('does not query them when no flag needs a person property', async () => {
    const before = h.decide.personStore.stats().personQueries;
    await post(h.url, '/decide/?v=4', body({ distinct_id: 'stored-1' }));
    expect(h.decide.personStore.stats().personQueries).toBe(before);
  });
});

describe('group flags', () => {
  let p: Project;
  beforeAll(async () => {
    p = await createProject(h);
    await insertGroup(h.pool, p.teamId, 'company', 0, 'acme', { plan: 'enterprise' });
    await insertFlag(h.pool, p.teamId, {
      key: 'enterprise',
      filters: {
        aggregation_group_type_index: 0,
        groups: [
          {
            properties: [{ key: 'plan', type: 'group', group_type_index: 0, value: 'enterprise' }],
            rollout_percentage: 100,
          },
        ],
      },
    });
  });
  const ask = (extra: Record<string, unknown>) =>
    post(h.url, '/decide/?v=4', { api_key: p.token, distinct_id: 'someone', ...extra });

  it('evaluates on the stored group properties of the group in `groups`', async () => {
    const res = await ask({ groups: { company: 'acme' } });
    expect(res.body.flags.enterprise).toMatchObject({
      enabled: true,
      reason: { code: 'condition_match', condition_index: 0 },
    });
  });

  it('uses request group_properties instead of stored ones', async () => {
    const before = h.decide.personStore.stats().groupQueries;
    const res = await ask({ groups: { company: 'acme' }, group_properties: { company: { plan: 'free' } } });
    expect(res.body.flags.enterprise.enabled).toBe(false);
    expect(h.decide.personStore.stats().groupQueries).toBe(before);
  });

  it('answers no_group_type without the group', async () => {
    const res = await ask({});
    expect(res.body.flags.enterprise).toMatchObject({
      enabled: false,
      reason: { code: 'no_group_type', condition_index: null },
    });
  });
});

describe('early access enrollment (super conditions)', () => {
  let p: Project;
  beforeAll(async () => {
    p = await createProject(h);
    await insertFlag(h.pool, p.teamId, {
      key: 'beta-x',
      filters: {
        groups: [{ properties: [], rollout_percentage: 0 }],
        super_groups: [
          {
            properties: [
              { key: '$feature_enrollment/beta-x', type: 'person', operator: 'exact', value: ['true'] },
            ],
            rollout_percentage: 100,
          },
        ],
      },
    });
    await insertPerson(h.pool, p.teamId, ['enrolled'], { '$feature_enrollment/beta-x': true });
  });

  it('is decided by $feature_enrollment/<key>, from the request or the stored person', async () => {
    const fromRequest = await post(h.url, '/decide/?v=4', {
      api_key: p.token,
      distinct_id: 'anyone',
      person_properties: { '$feature_enrollment/beta-x': true },
    });
    expect(fromRequest.body.flags['beta-x']).toMatchObject({
      enabled: true,
      reason: { code: 'super_condition_value', condition_index: 0 },
    });
    const stored = await post(h.url, '/decide/?v=4', { api_key: p.token, distinct_id: 'enrolled' });
    expect(stored.body.flags['beta-x']).toMatchObject({
      enabled: true,
      reason: { code: 'super_condition_value' },
    });
    const optedOut = await post(h.url, '/decide/?v=4', {
      api_key: p.token,
      distinct_id: 'anyone',
      person_properties: { '$feature_enrollment/beta-x': false },
    });
    expect(optedOut.body.flags['beta-x']).toMatchObject({
      enabled: false,
      reason: { code: 'super_condition_value' },
    });
    const none = await post(h.url, '/decide/?v=4', { api_key: p.token, distinct_id: 'not-enrolled' });
    expect(none.body.flags['beta-x']).toMatchObject({
      enabled: false,
      reason: { code: 'out_of_rollout_bound' },
    });
  });
});

describe('experience continuity', () => {
  it('keeps the anonymous bucket after identify via a stored hash-key override', async () => {
    const p = await createProject(h);
    const variants = ['a', 'b', 'c', 'd'].map((key) => ({ key, rollout_percentage: 25 }));
    await insertFlag(h.pool, p.teamId, {
      key: 'checkout',
      ensure_experience_continuity: true,
      filters: { groups: [{ rollout_percentage: 100 }], multivariate: { variants } },
    });
    const user = 'user-continuity';
    let anon = '';
    for (
      let i = 0;
      !anon || matchingVariant('checkout', anon, variants) === matchingVariant('checkout', user, variants);
      i++
    )
      anon = `anon-${i}`;
    const personId = await insertPerson(h.pool, p.teamId, [user, anon], {});
    const ask = (extra: Record<string, unknown> = {}) =>
      post(h.url, '/decide/?v=4', { api_key: p.token, distinct_id: user, ...extra });

    const first = await ask({ $anon_distinct_id: anon });
    expect(first.body.flags.checkout.variant).toBe(matchingVariant('checkout', anon, variants));
    const { rows } = await h.pool.query(
      'SELECT person_id::text, feature_flag_key, hash_key FROM feature_flag_hash_key_overrides WHERE team_id = $1',
      [p.teamId],
    );
    expect(rows).toEqual([{ person_id: personId, feature_flag_key: 'checkout', hash_key: anon }]);
    // Later requests without the anonymous id, or with another one, keep the first hash key.
    expect((await ask()).body.flags.checkout.variant).toBe(matchingVariant('checkout', anon, variants));
    expect((await ask({ $anon_distinct_id: 'another-anon' })).body.flags.checkout.variant).toBe(
      matchingVariant('checkout', anon, variants),
    );
  });
});

describe('quota', () => {
  it('answers flags {} and quotaLimited once usage passes the organization quota', async () => {
    const p = await createProject(h, { quota: 2 });
    await insertFlag(h.pool, p.teamId, { key: 'f', filters: { groups: [{ rollout_percentage: 100 }] } });
    const ask = () => post(h.url, '/decide/?v=4', { api_key: p.token, distinct_id: 'q' });
    expect((await ask()).body.flags.f.enabled).toBe(true);
    expect((await ask()).body).not.toHaveProperty('quotaLimited');
    const limited = await ask();
    expect(limited.status).toBe(200);
    expect(limited.body.flags).toEqual({});
    expect(limited.body.quotaLimited).toEqual(['feature_flags']);
    await h.decide.usage.flush();
    const usage = await h.redis.get(
      redisKeys.flagUsage(p.organizationId, new Date().toISOString().slice(0, 7)),
    );
    expect(Number(usage)).toBe(3);
    const v3 = await post(h.url, '/decide/?v=3', { api_key: p.token, distinct_id: 'q' });
    expect(v3.body).toMatchObject({
      featureFlags: {},
      featureFlagPayloads: {},
      quotaLimited: ['feature_flags'],
    });
  });

  it('limits organizations listed in the quota-limited set', async () => {
    const p = await createProject(h);
    await insertFlag(h.pool, p.teamId, { key: 'f', filters: { groups: [{ rollout_percentage: 100 }] } });
    await h.redis.sadd(redisKeys.quotaLimitedFlags(), p.organizationId);
    const res = await post(h.url, '/decide/?v=4', { api_key: p.token, distinct_id: 'q' });
    expect(res.body).toMatchObject({ flags: {}, quotaLimited: ['feature_flags'] });
  });
});

describe('errors while computing flags', () => {
  it('leaves out a flag with an invalid regex and still answers the others', async () => {
    const p = await createProject(h);
    await insertFlag(h.pool, p.teamId, {
      key: 'bad-regex',
      filters: {
        groups: [
          {
            properties: [{ key: 'email', type: 'person', operator: 'regex', value: '(unclosed' }],
            rollout_percentage: 100,
          },
        ],
      },
    });
    await insertFlag(h.pool, p.teamId, { key: 'good', filters: { groups: [{ rollout_percentage: 100 }] } });
    await insertFlag(h.pool, p.teamId, { key: 'garbage', filters: { groups: 'not a list' } });
    const res = await post(h.url, '/decide/?v=4', {
      api_key: p.token,
      distinct_id: 'e',
      person_properties: { email: 'a@b.c' },
    });
    expect(res.status).toBe(200);
    expect(res.body.errorsWhileComputingFlags).toBe(true);
    expect(Object.keys(res.body.flags)).toEqual(['good']);
    const metrics = await (await fetch(`${h.url}/_metrics`)).text();
    expect(metrics).toMatch(
      /decide_errors_while_computing_flags_total\{cause="evaluation",service="decide"\} [1-9]/,
    );
  });
});

describe('GeoIP', () => {
  let p: Project;
  beforeAll(async () => {
    p = await createProject(h);
    await insertFlag(h.pool, p.teamId, {
      key: 'uk-only',
      filters: {
        groups: [
          {
            properties: [{ key: '$geoip_country_code', type: 'person', value: 'GB' }],
            rollout_percentage: 100,
          },
        ],
      },
    });
  });
  const ask = (extra: Record<string, unknown>, headers: Record<string, string> = {}) =>
    post(h.url, '/decide/?v=4', { api_key: p.token, distinct_id: 'geo', ...extra }, headers);

  it('fills $geoip_* from the address the trusted proxy saw, not what the client wrote before it', async () => {
    // This harness runs with TRUSTED_PROXY_HOPS=1: the last entry is the one the proxy appended.
    expect((await ask({}, { 'x-forwarded-for': '8.8.8.8, 81.2.69.142' })).body.flags['uk-only'].enabled).toBe(
      true,
    );
    expect((await ask({}, { 'x-forwarded-for': '81.2.69.142, 8.8.8.8' })).body.flags['uk-only'].enabled).toBe(
      false,
    );
  });

  it('is turned off by geoip_disable and overridden by request person_properties', async () => {
    expect(
      (await ask({ geoip_disable: true }, { 'x-forwarded-for': '81.2.69.142' })).body.flags['uk-only']
        .enabled,
    ).toBe(false);
    expect(
      (await ask({ person_properties: { $geoip_country_code: 'US' } }, { 'x-forwarded-for': '81.2.69.142' }))
        .body.flags['uk-only'].enabled,
    ).toBe(false);
  });
});

describe('operations', () => {
  it('serves health, readiness and decide metrics', async () => {
    expect((await fetch(`${h.url}/_health`)).status).toBe(200);
    expect((await fetch(`${h.url}/_ready`)).status).toBe(200);
    const metrics = await (await fetch(`${h.url}/_metrics`)).text();
    expect(metrics).toContain('decide_requests_total');
    expect(metrics).toContain('decide_request_duration_seconds_bucket');
    expect(metrics).toMatch(/decide_flag_definitions_total\{source="(redis|postgres)"/);
  });
});
