// Cohorts: CRUD in PostHog's shape, scopes, static members (CSV upload, add, remove, count),
// references between cohorts (missing, cycles), the rules between flags and cohorts (missing
// references, behavioural cohorts, flag dependency cycles, deleting a used cohort), and the
// project's cohort list in Redis after every write.
import { decodeCohortList, redisKeys } from '@sett/cache';
import { call, createKey, seed, startHarness, type Fixture, type Harness, type Reply } from './helpers';

let h: Harness;
let f: Fixture;
let key: string;
let readKey: string;
let flagKey: string;
let path: string;
let flagsPath: string;

interface Listed {
  id: number;
  name: string;
  filters: unknown;
  is_static: boolean;
  version: number;
}

async function redisCohorts(teamId: number) {
  return decodeCohortList<Listed>(await h.redis.get(redisKeys.cohorts(teamId)));
}

const person = (key: string, value: unknown, operator = 'exact', negation = false) => ({
  key,
  type: 'person',
  value,
  operator,
  negation,
});
const tree = (...values: unknown[]) => ({ properties: { type: 'OR', values: [{ type: 'AND', values }] } });
const cohortRef = (id: number) => ({ key: 'id', type: 'cohort', value: id, negation: false });

async function upload(method: string, url: string, csv: string, fields: Record<string, string> = {}) {
  const form = new FormData();
  for (const [k, v] of Object.entries(fields)) form.append(k, v);
  form.append('csv', new Blob([csv], { type: 'text/csv' }), 'members.csv');
  const res = await fetch(`${h.url}${url}`, {
    method,
    headers: { authorization: `Bearer ${key}` },
    body: form,
  });
  return { status: res.status, body: (await res.json()) as Reply['body'] };
}

const memberIds = async (cohortId: number) =>
  (await h.prisma.cohortMember.findMany({ where: { cohortId }, orderBy: { distinctId: 'asc' } })).map(
    (m) => m.distinctId,
  );

beforeAll(async () => {
  h = await startHarness();
  f = await seed(h.prisma);
  key = await createKey(h.prisma, f.alice.id, ['cohort:write', 'feature_flag:write']);
  readKey = await createKey(h.prisma, f.alice.id, ['cohort:read']);
  flagKey = await createKey(h.prisma, f.alice.id, ['feature_flag:write']);
  path = `/api/projects/${f.teamA.id}/cohorts/`;
  flagsPath = `/api/projects/${f.teamA.id}/feature_flags/`;
});
afterAll(() => h.stop());

test('create, list, retrieve, update and soft delete in PostHog shape; Redis list follows every write', async () => {
  const filters = tree(person('email', '@a.test', 'icontains'), person('plan', ['pro'], 'exact', true));
  const created = await call(h, 'POST', path, key, { name: 'Pro users', description: 'd', filters });
  expect(created.status).toBe(201);
  expect(created.body).toMatchObject({
    name: 'Pro users',
    description: 'd',
    filters,
    is_static: false,
    count: null,
    deleted: false,
    version: 1,
    created_by: { id: f.alice.id },
  });
  expect(typeof created.body.created_at).toBe('string');
  const id = created.body.id as number;
  let list = await redisCohorts(f.teamA.id);
  expect(list?.cohorts).toContainEqual({ id, name: 'Pro users', filters, is_static: false, version: 1 });

  const listed = await call(h, 'GET', path, readKey);
  expect(listed.status).toBe(200);
  expect(listed.body.count).toBeGreaterThanOrEqual(1);
  expect(listed.body.results.map((c: Listed) => c.id)).toContain(id);
  expect((await call(h, 'GET', `${path}${id}/`, readKey)).body.name).toBe('Pro users');

  const renamed = await call(h, 'PATCH', `${path}${id}/`, key, {
    name: 'Pro',
    filters: tree(person('plan', 'pro')),
  });
  expect(renamed.status).toBe(200);
  expect(renamed.body.version).toBe(2);
  list = await redisCohorts(f.teamA.id);
  expect(list?.cohorts.find((c) => c.id === id)).toEqual({
    id,
    name: 'Pro',
    filters: tree(person('plan', 'pro')),
    is_static: false,
    version: 2,
  });

  expect((await call(h, 'DELETE', `${path}${id}/`, key)).status).toBe(204);
  expect((await redisCohorts(f.teamA.id))?.cohorts.map((c) => c.id)).not.toContain(id);
  expect((await call(h, 'GET', `${path}${id}/`, readKey)).status).toBe(404);
  const row = await h.prisma.cohort.findUniqueOrThrow({ where: { id } });
  expect(row.deleted).toBe(true);
  expect(row.version).toBe(3);

  // PATCH {deleted: true} deletes too.
  const other = await call(h, 'POST', path, key, { name: 'Other', filters: tree(person('a', 'b')) });
  expect((await call(h, 'PATCH', `${path}${other.body.id}/`, key, { deleted: true })).body.deleted).toBe(
    true,
  );
  expect((await redisCohorts(f.teamA.id))?.cohorts.map((c) => c.id)).not.toContain(other.body.id);
});

test('scopes and visibility: 401, 403, 404 for another organization', async () => {
  expect((await call(h, 'GET', path)).status).toBe(401);
  expect((await call(h, 'GET', path, flagKey)).status).toBe(403);
  expect((await call(h, 'POST', path, readKey, { name: 'x' })).status).toBe(403);
  const bobKey = await createKey(h.prisma, f.bob.id, ['cohort:write']);
  const mine = await call(h, 'POST', path, key, { name: 'Mine', filters: tree(person('a', 'b')) });
  expect((await call(h, 'GET', path, bobKey)).status).toBe(404);
  expect((await call(h, 'GET', `${path}${mine.body.id}/`, bobKey)).status).toBe(404);
  expect((await call(h, 'PATCH', `${path}${mine.body.id}/`, bobKey, { name: 'x' })).status).toBe(404);
  // A cohort of project B is not found through project B's own path with A's id either.
  const bPath = `/api/projects/${f.teamB.id}/cohorts/`;
  expect((await call(h, 'GET', `${bPath}${mine.body.id}/`, bobKey)).status).toBe(404);
  expect((await call(h, 'GET', `${path}abc/`, readKey)).status).toBe(404);
});

test('filters are validated: operators, regex, leaf kinds, cap on conditions', async () => {
  const bad = async (filters: unknown) => {
    const r = await call(h, 'POST', path, key, { name: 'bad', filters });
    expect(r.status).toBe(400);
    expect(r.body.attr).toMatch(/^filters/);
    return r.body.detail as string;
  };
  await bad(tree(person('a', 'b', 'no_such_operator')));
  await bad(tree(person('a', '(?=x)', 'regex')));
  await bad(tree({ key: 'a', type: 'event', value: 1 }));
  await bad(tree(person('a', undefined, 'exact')));
  await bad({ properties: { type: 'XOR', values: [] } });
  await bad(tree(...Array.from({ length: 1001 }, (_, i) => person(`k${i}`, 'v'))));
  expect(await bad(tree(cohortRef(999_999)))).toMatch(/Invalid Cohort ID/);
  // Every flag operator is accepted, and is_set needs no value.
  const ok = await call(h, 'POST', path, key, {
    name: 'all operators',
    filters: tree(
      ...[
        'exact',
        'is_not',
        'icontains',
        'not_icontains',
        'regex',
        'not_regex',
        'gt',
        'gte',
        'lt',
        'lte',
      ].map((op) => person('p', '1', op)),
      person('p', undefined, 'is_set'),
      person('p', undefined, 'is_not_set'),
      person('d', '-7d', 'is_date_after'),
    ),
  });
  expect(ok.status).toBe(201);
});

test('cohorts in cohorts: references are kept, a cycle is refused with attr filters', async () => {
  const a = (await call(h, 'POST', path, key, { name: 'A', filters: tree(person('a', '1')) })).body;
  const b = (await call(h, 'POST', path, key, { name: 'B', filters: tree(cohortRef(a.id)) })).body;
  const c = (
    await call(h, 'POST', path, key, {
      name: 'C',
      filters: tree({ ...cohortRef(b.id), value: String(b.id) }),
    })
  ).body;
  expect(c.filters.properties.values[0].values[0].value).toBe(b.id);
  const loop = await call(h, 'PATCH', `${path}${a.id}/`, key, { filters: tree(cohortRef(c.id)) });
  expect(loop.status).toBe(400);
  expect(loop.body.attr).toBe('filters');
  expect(loop.body.detail).toMatch(/loop/);
  const self = await call(h, 'PATCH', `${path}${a.id}/`, key, { filters: tree(cohortRef(a.id)) });
  expect(self.status).toBe(400);
  // A used cohort cannot be deleted while another cohort refers to it.
  const del = await call(h, 'DELETE', `${path}${b.id}/`, key);
  expect(del.status).toBe(400);
  expect(del.body.detail).toMatch(/used as criteria/);
  // Another project's cohort is not a valid reference.
  const otherProject = await h.prisma.cohort.create({ data: { teamId: f.teamA2.id, name: 'elsewhere' } });
  expect(
    (await call(h, 'POST', path, key, { name: 'x', filters: tree(cohortRef(otherProject.id)) })).status,
  ).toBe(400);
});

test('static cohorts: CSV upload, add and remove by distinct id, count and version kept right', async () => {
  const created = await upload('POST', path, 'distinct_id\nu1\nu2\n"u,3"\nu1\n\n', {
    name: 'Beta',
    is_static: 'true',
  });
  expect(created.status).toBe(201);
  expect(created.body).toMatchObject({ is_static: true, count: 3, version: 1 });
  const id = created.body.id as number;
  expect(await memberIds(id)).toEqual(['u,3', 'u1', 'u2']);
  expect((await redisCohorts(f.teamA.id))?.cohorts.find((c) => c.id === id)).toMatchObject({
    is_static: true,
    version: 1,
  });

  const added = await call(h, 'PATCH', `${path}${id}/add_persons_to_static_cohort/`, key, {
    distinct_ids: ['u2', 'u4', 'u5'],
  });
  expect(added.status).toBe(200);
  expect(added.body).toMatchObject({ count: 5, version: 2 });
  expect((await redisCohorts(f.teamA.id))?.cohorts.find((c) => c.id === id)?.version).toBe(2);

  const removed = await call(h, 'PATCH', `${path}${id}/remove_person_from_static_cohort/`, key, {
    distinct_id: 'u1',
  });
  expect(removed.body).toMatchObject({ count: 4, version: 3 });
  const removedMissing = await call(h, 'PATCH', `${path}${id}/remove_person_from_static_cohort/`, key, {
    distinct_ids: ['nobody'],
  });
  expect(removedMissing.body.count).toBe(4);
  expect((await redisCohorts(f.teamA.id))?.cohorts.find((c) => c.id === id)?.version).toBe(4);

  // A second CSV on PATCH adds to the members; a multi-column CSV uses its distinct_id column.
  const patched = await upload('PATCH', `${path}${id}/`, 'email,distinct_id\na@x,u6\nb@x,u2\nshort\n');
  expect(patched.status).toBe(200);
  expect(patched.body.count).toBe(5);
  expect(await memberIds(id)).toEqual(['u,3', 'u2', 'u4', 'u5', 'u6']);
  expect(patched.body.count).toBe((await memberIds(id)).length);

  const members = await call(h, 'GET', `${path}${id}/members/?limit=2`, readKey);
  expect(members.body.count).toBe(5);
  expect(members.body.results).toEqual([{ distinct_id: 'u,3' }, { distinct_id: 'u2' }]);

  // Dynamic cohorts take no members; static ones take no criteria.
  const dynamic = (await call(h, 'POST', path, key, { name: 'dyn', filters: tree(person('a', 'b')) })).body;
  expect(
    (
      await call(h, 'PATCH', `${path}${dynamic.id}/add_persons_to_static_cohort/`, key, {
        distinct_ids: ['x'],
      })
    ).status,
  ).toBe(400);
  expect(
    (await call(h, 'POST', path, key, { name: 's', is_static: true, filters: tree(person('a', 'b')) }))
      .status,
  ).toBe(400);
  expect((await call(h, 'PATCH', `${path}${id}/`, key, { is_static: false })).status).toBe(400);
});

test('CSV refusals name the line; a single column without header is all ids; 100k ids import in seconds', async () => {
  const nul = await upload('POST', path, 'a\nb\nc\u0000d\n', { name: 'n', is_static: 'true' });
  expect(nul.status).toBe(400);
  expect(nul.body.attr).toBe('csv');
  expect(nul.body.detail).toMatch(/^Line 3:/);
  const long = await upload('POST', path, `a\n${'x'.repeat(401)}\n`, { name: 'n', is_static: 'true' });
  expect(long.body.detail).toMatch(/^Line 2:/);
  expect((await upload('POST', path, 'email\na@b.c\n', { name: 'n', is_static: 'true' })).status).toBe(400);
  expect((await upload('POST', path, 'u1\n', { name: 'n' })).status).toBe(400); // not static
  const noHeader = await upload('POST', path, 'first\nsecond\n', { name: 'plain', is_static: 'true' });
  expect(noHeader.body.count).toBe(2);

  const csv = ['distinct_id', ...Array.from({ length: 100_000 }, (_, i) => `user-${i}`)].join('\n');
  const started = Date.now();
  const big = await upload('POST', path, csv, { name: 'Big', is_static: 'true' });
  const took = Date.now() - started;
  expect(big.status).toBe(201);
  expect(big.body.count).toBe(100_000);
  expect(await h.prisma.cohortMember.count({ where: { cohortId: big.body.id } })).toBe(100_000);
  expect(took).toBeLessThan(10_000);
});

test('a CSV over 50 MB is refused with 413 and nothing is saved', async () => {
  const before = await h.prisma.cohort.count();
  const line = `${'x'.repeat(99)}\n`;
  const res = await upload('POST', path, line.repeat((50 * 1024 * 1024) / 100 + 1000), {
    name: 'Huge',
    is_static: 'true',
  });
  expect(res.status).toBe(413);
  expect(await h.prisma.cohort.count()).toBe(before);
  // The connection is still usable for the next request.
  expect((await call(h, 'GET', path, readKey)).status).toBe(200);
});

test('flag filters: missing cohorts and flags, behavioural cohorts and dependency cycles are refused', async () => {
  const flagWith = (k: string, properties: unknown[]) => ({
    key: k,
    filters: { groups: [{ properties, rollout_percentage: 100 }] },
  });
  const missing = await call(
    h,
    'POST',
    flagsPath,
    key,
    flagWith('f-missing', [{ key: 'id', type: 'cohort', value: 987654 }]),
  );
  expect(missing.status).toBe(400);
  expect(missing.body.attr).toBe('filters');

  const deleted = (await call(h, 'POST', path, key, { name: 'gone', filters: tree(person('a', 'b')) })).body;
  await call(h, 'DELETE', `${path}${deleted.id}/`, key);
  expect((await call(h, 'POST', flagsPath, key, flagWith('f-deleted', [cohortRef(deleted.id)]))).status).toBe(
    400,
  );

  const behavioural = (
    await call(h, 'POST', path, key, {
      name: 'Did pay',
      filters: tree({
        key: '$pageview',
        type: 'behavioral',
        value: 'performed_event',
        event_type: 'events',
        time_value: 7,
        time_interval: 'day',
      }),
    })
  ).body;
  expect(behavioural.id).toBeDefined();
  const viaNested = (
    await call(h, 'POST', path, key, { name: 'nested', filters: tree(cohortRef(behavioural.id)) })
  ).body;
  for (const id of [behavioural.id, viaNested.id]) {
    const r = await call(h, 'POST', flagsPath, key, flagWith(`f-beh-${id}`, [cohortRef(id)]));
    expect(r.status).toBe(400);
    expect(r.body.code).toBe('behavioral_cohort_found');
  }

  const plain = (await call(h, 'POST', path, key, { name: 'plain', filters: tree(person('a', 'b')) })).body;
  const flagA = await call(
    h,
    'POST',
    flagsPath,
    key,
    flagWith('f-a', [{ ...cohortRef(plain.id), operator: 'in' }]),
  );
  expect(flagA.status).toBe(201);
  // A cohort used by an active flag: no behavioural criteria, no deletion.
  const addEvents = await call(h, 'PATCH', `${path}${plain.id}/`, key, {
    filters: tree(cohortRef(behavioural.id)),
  });
  expect(addEvents.status).toBe(400);
  expect(addEvents.body.code).toBe('behavioral_cohort_found');
  const del = await call(h, 'DELETE', `${path}${plain.id}/`, key);
  expect(del.status).toBe(400);
  expect(del.body.detail).toMatch(/active feature flag/);
  // Once the flag is inactive the cohort may go (PostHog checks active flags only).
  await call(h, 'PATCH', `${flagsPath}${flagA.body.id}/`, key, { active: false });
  expect((await call(h, 'DELETE', `${path}${plain.id}/`, key)).status).toBe(204);

  const dep = (k: string, value: unknown = true) => ({
    key: k,
    type: 'flag',
    value,
    operator: 'flag_evaluates_to',
  });
  expect((await call(h, 'POST', flagsPath, key, flagWith('f-b', [dep('no-such-flag')]))).status).toBe(400);
  const b = await call(h, 'POST', flagsPath, key, flagWith('f-b', [dep(String(flagA.body.id))]));
  expect(b.status).toBe(201);
  const c = await call(h, 'POST', flagsPath, key, flagWith('f-c', [dep('f-b', 'variant-x')]));
  expect(c.status).toBe(201);
  expect((await call(h, 'POST', flagsPath, key, flagWith('f-d', [dep('f-b', 3)]))).status).toBe(400);
  // f-a -> f-c -> f-b -> f-a: refused, also through several hops, and a flag on itself.
  const cycle = await call(h, 'PATCH', `${flagsPath}${flagA.body.id}/`, key, flagWith('f-a', [dep('f-c')]));
  expect(cycle.status).toBe(400);
  expect(cycle.body.attr).toBe('filters');
  const selfDep = await call(h, 'PATCH', `${flagsPath}${b.body.id}/`, key, {
    filters: flagWith('f-b', [dep('f-b')]).filters,
  });
  expect(selfDep.status).toBe(400);
});
