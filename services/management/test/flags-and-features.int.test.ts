// Feature flags and early access features: shapes, validation errors, the enrollment super
// condition, soft delete, version bumps and the flag list in Redis after every write.
import { createRedis, decodeFlagList, redisKeys } from '@sett/cache';
import type { FlagDefinition } from '@sett/flags';
import { call, createKey, seed, startHarness, type Fixture, type Harness } from './helpers';

let h: Harness;
let f: Fixture;
let key: string;
let flagsPath: string;
let eafPath: string;

async function redisFlags(teamId: number) {
  return decodeFlagList<FlagDefinition>(await h.redis.get(redisKeys.flags(teamId)));
}

beforeAll(async () => {
  h = await startHarness();
  f = await seed(h.prisma);
  key = await createKey(h.prisma, f.alice.id, ['feature_flag:write', 'early_access_feature:write']);
  flagsPath = `/api/projects/${f.teamA.id}/feature_flags/`;
  eafPath = `/api/projects/${f.teamA.id}/early_access_feature/`;
  await h.prisma.groupTypeMapping.create({
    data: { teamId: f.teamA.id, groupType: 'company', groupTypeIndex: 0 },
  });
});
afterAll(() => h.stop());

const enrollment = (flagKey: string) => [
  {
    properties: [
      { key: `$feature_enrollment/${flagKey}`, type: 'person', operator: 'exact', value: ['true'] },
    ],
    rollout_percentage: 100,
  },
];

test('flag create/update/delete: PostHog shape, version bumps, and the Redis list follows every write', async () => {
  const filters = {
    groups: [
      {
        properties: [{ key: 'email', type: 'person', operator: 'icontains', value: '@a.test' }],
        rollout_percentage: 50,
      },
    ],
  };
  const created = await call(h, 'POST', flagsPath, key, {
    key: 'new-checkout',
    name: 'New checkout',
    filters,
  });
  expect(created.status).toBe(201);
  expect(created.body).toMatchObject({
    team_id: f.teamA.id,
    key: 'new-checkout',
    name: 'New checkout',
    filters,
    deleted: false,
    active: true,
    ensure_experience_continuity: false,
    has_encrypted_payloads: false,
    version: 1,
  });
  expect(created.body.created_by).toMatchObject({ uuid: f.alice.uuid });
  let list = await redisFlags(f.teamA.id);
  expect(list?.flags.map((x) => [x.key, x.version])).toEqual([['new-checkout', 1]]);
  expect(list?.flags[0]?.filters).toEqual(filters);

  const updated = await call(h, 'PATCH', `${flagsPath}${created.body.id}/`, key, { active: false });
  expect(updated.body).toMatchObject({ active: false, version: 2 });
  list = await redisFlags(f.teamA.id);
  expect(list?.flags[0]).toMatchObject({ active: false, version: 2 });

  const got = await call(h, 'GET', `${flagsPath}${created.body.id}/`, key);
  expect(got.body).toEqual(updated.body);
  const page = await call(h, 'GET', flagsPath, key);
  expect(page.body).toMatchObject({ count: 1, next: null, previous: null });

  expect((await call(h, 'DELETE', `${flagsPath}${created.body.id}/`, key)).status).toBe(204);
  const row = await h.prisma.featureFlag.findUniqueOrThrow({ where: { id: created.body.id } });
  expect(row).toMatchObject({ deleted: true, version: 3 });
  expect((await redisFlags(f.teamA.id))?.flags).toEqual([]);
  expect((await call(h, 'GET', `${flagsPath}${created.body.id}/`, key)).status).toBe(404);
  // the key of a deleted flag can be reused
  expect((await call(h, 'POST', flagsPath, key, { key: 'new-checkout' })).status).toBe(201);
  const dup = await call(h, 'POST', flagsPath, key, { key: 'new-checkout' });
  expect(dup).toMatchObject({ status: 400, body: { attr: 'key', code: 'unique' } });
});

test('multivariate flags with payloads and a group aggregation are accepted', async () => {
  const filters = {
    aggregation_group_type_index: 0,
    groups: [{ properties: [], rollout_percentage: 100, variant: 'b' }],
    multivariate: {
      variants: [
        { key: 'a', rollout_percentage: 33.33 },
        { key: 'b', rollout_percentage: 33.33 },
        { key: 'c', rollout_percentage: 33.34 },
      ],
    },
    payloads: { a: '{"x":1}', c: '2' },
  };
  const r = await call(h, 'POST', flagsPath, key, { key: 'mv', filters });
  expect(r.status).toBe(201);
});

test('a flag created with fields PostHog ignores (description) is created without them', async () => {
  const r = await call(h, 'POST', flagsPath, key, {
    key: 'described',
    description: 'ignored',
    colour: 'red',
  });
  expect(r.status).toBe(201);
  expect(r.body).toMatchObject({ key: 'described' });
  expect(r.body).not.toHaveProperty('colour');
});

test.each([
  ['key with spaces', { key: 'has space' }, 'key'],
  ['missing key', { name: 'x' }, 'key'],
  [
    'rollout above 100',
    { key: 'k2', filters: { groups: [{ rollout_percentage: 101 }] } },
    'filters.groups.0.rollout_percentage',
  ],
  [
    'variants not summing to 100',
    {
      key: 'k3',
      filters: {
        multivariate: {
          variants: [
            { key: 'a', rollout_percentage: 50 },
            { key: 'b', rollout_percentage: 40 },
          ],
        },
      },
    },
    'filters',
  ],
  [
    'payload key not a variant',
    {
      key: 'k4',
      filters: { multivariate: { variants: [{ key: 'a', rollout_percentage: 100 }] }, payloads: { z: '1' } },
    },
    'filters',
  ],
  ['boolean flag payload not keyed true', { key: 'k5', filters: { payloads: { yes: '1' } } }, 'filters'],
  ['unknown group type index', { key: 'k6', filters: { aggregation_group_type_index: 3 } }, 'filters'],
  ['group variant that does not exist', { key: 'k7', filters: { groups: [{ variant: 'nope' }] } }, 'filters'],
])('flag create rejects %s', async (_name, body, attr) => {
  const r = await call(h, 'POST', flagsPath, key, body);
  expect(r.status).toBe(400);
  expect(r.body).toMatchObject({ type: 'validation_error', attr });
});

test('early access feature without a flag creates one with the enrollment super condition', async () => {
  const r = await call(h, 'POST', eafPath, key, {
    name: 'Dark Mode!',
    description: 'd',
    stage: 'alpha',
    documentation_url: 'https://docs.example.com/dark',
  });
  expect(r.status).toBe(201);
  expect(r.body).toMatchObject({
    name: 'Dark Mode!',
    description: 'd',
    stage: 'alpha',
    documentation_url: 'https://docs.example.com/dark',
    feature_flag_id: expect.any(Number),
  });
  expect(r.body.feature_flag).toMatchObject({
    id: r.body.feature_flag_id,
    key: 'dark-mode',
    team_id: f.teamA.id,
  });
  expect(r.body.feature_flag.filters.super_groups).toEqual(enrollment('dark-mode'));
  const inRedis = (await redisFlags(f.teamA.id))?.flags.find((x) => x.key === 'dark-mode');
  expect(inRedis?.filters.super_groups).toEqual(enrollment('dark-mode'));
  // A second feature with the same name gets a unique key.
  const again = await call(h, 'POST', eafPath, key, { name: 'dark mode' });
  expect(again.body.feature_flag.key).toBe('dark-mode-2');

  const got = await call(h, 'GET', `${eafPath}${r.body.id}/`, key);
  expect(got.status).toBe(200);
  expect(got.body).not.toHaveProperty('feature_flag_id');
  expect(got.body.feature_flag.id).toBe(r.body.feature_flag_id);
});

test('early access feature linking an existing flag; delete removes the super condition', async () => {
  const flag = await call(h, 'POST', flagsPath, key, {
    key: 'linked',
    filters: { groups: [{ rollout_percentage: 10 }] },
  });
  const r = await call(h, 'POST', eafPath, key, { name: 'Linked', feature_flag_id: flag.body.id });
  expect(r.status).toBe(201);
  expect(r.body.feature_flag_id).toBe(flag.body.id);
  let row = await h.prisma.featureFlag.findUniqueOrThrow({ where: { id: flag.body.id } });
  expect(row.filters).toEqual({ groups: [{ rollout_percentage: 10 }], super_groups: enrollment('linked') });
  expect(row.version).toBe(2);
  // a flag in use cannot be deleted
  expect((await call(h, 'DELETE', `${flagsPath}${flag.body.id}/`, key)).body).toMatchObject({
    attr: 'deleted',
  });
  const del = await call(h, 'DELETE', `${eafPath}${r.body.id}/`, key);
  expect(del.status).toBe(204);
  row = await h.prisma.featureFlag.findUniqueOrThrow({ where: { id: flag.body.id } });
  expect(row.filters).toEqual({ groups: [{ rollout_percentage: 10 }] });
  expect(
    (await redisFlags(f.teamA.id))?.flags.find((x) => x.key === 'linked')?.filters.super_groups,
  ).toBeUndefined();
  expect((await call(h, 'GET', `${eafPath}${r.body.id}/`, key)).status).toBe(404);
});

test.each([
  ['an unknown stage', { name: 'x', stage: 'launched' }, 'stage'],
  ['a missing name', { stage: 'beta' }, 'name'],
  [
    'a documentation_url that is not a URL',
    { name: 'x', documentation_url: 'not a url' },
    'documentation_url',
  ],
  ['a flag of another project', { name: 'x', feature_flag_id: -1 }, 'feature_flag_id'],
  ['an unknown flag', { name: 'x', feature_flag_id: 999999 }, 'feature_flag_id'],
])('early access feature create rejects %s', async (_name, body, attr) => {
  const r = await call(h, 'POST', eafPath, key, body);
  expect(r.status).toBe(400);
  expect(r.body).toMatchObject({ type: 'validation_error', attr });
});

test('early access feature: flag of another project or deleted flag cannot be linked', async () => {
  const bKey = await createKey(h.prisma, f.bob.id, ['*']);
  const bFlag = await call(h, 'POST', `/api/projects/${f.teamB.id}/feature_flags/`, bKey, { key: 'b-flag' });
  expect(
    (await call(h, 'POST', eafPath, key, { name: 'x', feature_flag_id: bFlag.body.id })).body,
  ).toMatchObject({ attr: 'feature_flag_id' });
  const gone = await call(h, 'POST', flagsPath, key, { key: 'gone' });
  await call(h, 'DELETE', `${flagsPath}${gone.body.id}/`, key);
  expect(
    (await call(h, 'POST', eafPath, key, { name: 'x', feature_flag_id: gone.body.id })).body,
  ).toMatchObject({ attr: 'feature_flag_id' });
});

test('early access feature update accepts only the four fields', async () => {
  const r = await call(h, 'POST', eafPath, key, { name: 'Updatable' });
  expect(r.body.stage).toBe('draft');
  const path = `${eafPath}${r.body.id}/`;
  const ok = await call(h, 'PATCH', path, key, {
    name: 'Renamed',
    description: 'new',
    stage: 'general-availability',
    documentation_url: 'http://x.test/doc',
  });
  expect(ok.body).toMatchObject({
    name: 'Renamed',
    description: 'new',
    stage: 'general-availability',
    documentation_url: 'http://x.test/doc',
  });
  for (const [body, attr] of [
    [{ feature_flag_id: 1 }, 'feature_flag_id'],
    [{ stage: 'gone' }, 'stage'],
    [{ documentation_url: 'ftp:/x' }, 'documentation_url'],
  ] as const) {
    expect((await call(h, 'PATCH', path, key, body)).body).toMatchObject({ type: 'validation_error', attr });
  }
});

test('early access feature list pages', async () => {
  const p1 = await call(h, 'GET', `${eafPath}?limit=1`, key);
  expect(p1.body.count).toBeGreaterThanOrEqual(3);
  expect(p1.body.results).toHaveLength(1);
  expect(p1.body.next).toBe(`${eafPath}?limit=1&offset=1`);
  const last = await call(h, 'GET', `${eafPath}?limit=1&offset=${p1.body.count - 1}`, key);
  expect(last.body.next).toBeNull();
  expect(last.body.previous).toContain(`offset=${p1.body.count - 2}`);
});

test('an early access feature update publishes the project on the flags-changed channel (decide drops its public list)', async () => {
  const created = await call(h, 'POST', eafPath, key, { name: 'Publish check', stage: 'alpha' });
  expect(created.status).toBe(201);
  const subscriber = createRedis({ url: process.env.REDIS_URL || 'redis://127.0.0.1:6379' });
  try {
    const published = new Promise<void>((resolve) =>
      subscriber.on('message', (channel: string, message: string) => {
        if (channel === redisKeys.flagsChangedChannel() && message === String(f.teamA.id)) resolve();
      }),
    );
    await subscriber.subscribe(redisKeys.flagsChangedChannel());
    const updated = await call(h, 'PATCH', `${eafPath}${created.body.id}/`, key, { stage: 'beta' });
    expect(updated.status).toBe(200);
    await published;
  } finally {
    subscriber.disconnect();
  }
});
