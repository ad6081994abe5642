// Events (cursor pagination, filters), persons, projects and personal API keys (value shown
// once, stored only hashed, scope subset rule).
import { randomUUID } from 'node:crypto';
import { hashPersonalApiKey } from '@sett/keys';
import { waitFor } from '@sett/testing';
import { call, createKey, seed, startHarness, type Fixture, type Harness, type Reply } from './helpers';

let h: Harness;
let f: Fixture;
let key: string;

beforeAll(async () => {
  h = await startHarness();
  f = await seed(h.prisma);
  key = await createKey(h.prisma, f.alice.id, [
    'project:read',
    'query:read',
    'person:read',
    'personal_api_key:write',
  ]);
  // 7 events at distinct times plus two sharing one timestamp (the uuid breaks the tie).
  const base = Date.parse('2026-01-01T00:00:00.000Z');
  const rows = Array.from({ length: 9 }, (_, i) => ({
    uuid: randomUUID(),
    teamId: f.teamA.id,
    event: i % 2 ? 'clicked' : '$pageview',
    distinctId: i < 4 ? 'd1' : 'd2',
    properties: { i },
    timestamp: new Date(base + Math.min(i, 7) * 1000 + 0.5),
  }));
  await h.prisma.event.createMany({ data: rows });
  await h.prisma.event.create({
    data: {
      uuid: randomUUID(),
      teamId: f.teamB.id,
      event: 'other',
      distinctId: 'd1',
      timestamp: new Date(base),
    },
  });
  const person = await h.prisma.person.create({
    data: { uuid: randomUUID(), teamId: f.teamA.id, properties: { email: 'p@x.test' } },
  });
  await h.prisma.personDistinctId.createMany({
    data: [
      { teamId: f.teamA.id, distinctId: 'd1', personId: person.id },
      { teamId: f.teamA.id, distinctId: 'd1b', personId: person.id },
    ],
  });
  const person2 = await h.prisma.person.create({ data: { uuid: randomUUID(), teamId: f.teamA.id } });
  await h.prisma.personDistinctId.create({
    data: { teamId: f.teamA.id, distinctId: 'd2', personId: person2.id },
  });
});
afterAll(() => h.stop());

test('events: newest first, cursor pages cover every event once, next is relative (no SETT_PUBLIC_URL) and null at the end', async () => {
  const seen: string[] = [];
  const timestamps: string[] = [];
  let next: string | null = `/api/projects/${f.teamA.id}/events/?limit=4`;
  let pages = 0;
  while (next) {
    const r: Reply<{ results: { id: string; timestamp: string }[]; next: string | null }> = await call(
      h,
      'GET',
      next.replace(h.url, ''),
      key,
    );
    expect(r.status).toBe(200);
    for (const e of r.body.results) {
      seen.push(e.id);
      timestamps.push(e.timestamp);
    }
    next = r.body.next;
    if (next) expect(next.startsWith(`/api/projects/${f.teamA.id}/events/?`)).toBe(true);
    pages++;
  }
  expect(pages).toBe(3);
  expect(new Set(seen).size).toBe(9);
  expect([...timestamps].sort().reverse()).toEqual(timestamps);
});

test('events: filters and person', async () => {
  const path = `/api/projects/${f.teamA.id}/events/`;
  const clicked = await call(h, 'GET', `${path}?event=clicked`, key);
  expect(clicked.body.results.every((e: { event: string }) => e.event === 'clicked')).toBe(true);
  expect(clicked.body.results).toHaveLength(4);
  const d1 = await call(h, 'GET', `${path}?distinct_id=d1`, key);
  expect(d1.body.results).toHaveLength(4);
  expect(d1.body.results[0].person).toMatchObject({
    distinct_ids: ['d1', 'd1b'],
    properties: { email: 'p@x.test' },
  });
  expect(d1.body.results[0]).toMatchObject({
    id: expect.any(String),
    event: expect.any(String),
    distinct_id: 'd1',
    properties: expect.any(Object),
    timestamp: expect.any(String),
  });
  const window = await call(
    h,
    'GET',
    `${path}?after=2026-01-01T00:00:01.500Z&before=2026-01-01T00:00:05Z`,
    key,
  );
  expect(window.body.results.map((e: { properties: { i: number } }) => e.properties.i).sort()).toEqual([
    2, 3, 4,
  ]);
  for (const [qs, attr] of [
    ['after=yesterday', 'after'],
    ['cursor=zzz', 'cursor'],
    ['limit=-3', 'limit'],
    ['offset=10', 'offset'],
  ]) {
    expect((await call(h, 'GET', `${path}?${qs}`, key)).body).toMatchObject({
      type: 'validation_error',
      attr,
    });
  }
});

test('persons: distinct ids and properties, filter by distinct_id', async () => {
  const path = `/api/projects/${f.teamA.id}/persons/`;
  const all = await call(h, 'GET', path, key);
  expect(all.body.count).toBe(2);
  const one = await call(h, 'GET', `${path}?distinct_id=d1b`, key);
  expect(one.body.count).toBe(1);
  expect(one.body.results[0]).toMatchObject({
    distinct_ids: ['d1', 'd1b'],
    properties: { email: 'p@x.test' },
    created_at: expect.any(String),
  });
  expect(one.body.results[0].id).toBe(one.body.results[0].uuid);
  expect((await call(h, 'GET', `${path}?distinct_id=nobody`, key)).body.count).toBe(0);
});

test('projects: only those of the user organizations', async () => {
  const list = await call(h, 'GET', '/api/projects/', key);
  expect(list.body.results.map((p: { id: number }) => p.id)).toEqual([f.teamA.id, f.teamA2.id]);
  expect(list.body.results[0]).toMatchObject({
    id: f.teamA.id,
    project_id: f.teamA.id,
    api_token: f.teamA.apiToken,
    organization: f.orgA.id,
  });
  expect((await call(h, 'GET', `/api/projects/${f.teamA.id}/`, key)).body.name).toBe('A project');
  expect((await call(h, 'GET', '/api/projects/abc/', key)).status).toBe(404);
});

test('personal API keys: value shown once, stored hashed, listed without value, deleted keys stop working', async () => {
  const created = await call(h, 'POST', '/api/personal_api_keys/', key, {
    label: 'ci',
    scopes: ['project:read'],
  });
  expect(created.status).toBe(201);
  const value: string = created.body.value;
  expect(value).toMatch(/^phx_/);
  expect(created.body).toMatchObject({
    label: 'ci',
    scopes: ['project:read'],
    mask_value: `${value.slice(0, 4)}...${value.slice(-4)}`,
    last_used_at: null,
  });
  const stored = await h.prisma.personalApiKey.findUniqueOrThrow({ where: { id: created.body.id } });
  expect(stored.secureValue).toBe(hashPersonalApiKey(value));
  expect(JSON.stringify(stored)).not.toContain(value);

  expect((await call(h, 'GET', '/api/projects/', value)).status).toBe(200);
  const list = await call(h, 'GET', '/api/personal_api_keys/', key);
  expect(list.body.count).toBe(2);
  expect(JSON.stringify(list.body)).not.toContain(value);
  expect(list.body.results.every((k: object) => !('value' in k))).toBe(true);
  // last_used_at is written by the request above, off its path: wait for the row to show it.
  await waitFor(
    'last_used_at to be written',
    async () =>
      (await h.prisma.personalApiKey.findUniqueOrThrow({ where: { id: created.body.id } })).lastUsedAt,
    { intervalMs: 20 },
  );
  expect((await call(h, 'GET', `/api/personal_api_keys/${created.body.id}/`, key)).body.last_used_at).toEqual(
    expect.any(String),
  );

  expect((await call(h, 'DELETE', `/api/personal_api_keys/${created.body.id}/`, key)).status).toBe(204);
  expect((await call(h, 'GET', '/api/projects/', value)).status).toBe(401);
  // another user's key is not visible
  const bobKeyValue = await createKey(h.prisma, f.bob.id, ['*']);
  const bobKey = await h.prisma.personalApiKey.findUniqueOrThrow({
    where: { secureValue: hashPersonalApiKey(bobKeyValue) },
  });
  expect((await call(h, 'DELETE', `/api/personal_api_keys/${bobKey.id}/`, key)).status).toBe(404);
});

test.each([
  [{ label: 'x', scopes: ['nope:read'] }, 'scopes.0'],
  [{ label: 'x', scopes: [] }, 'scopes'],
  [{ label: '', scopes: ['project:read'] }, 'label'],
  [{ scopes: ['project:read'] }, 'label'],
])('personal API key create rejects %j', async (body, attr) => {
  expect((await call(h, 'POST', '/api/personal_api_keys/', key, body)).body).toMatchObject({
    type: 'validation_error',
    attr,
  });
});

test('a key cannot mint a key with scopes it does not hold', async () => {
  const r = await call(h, 'POST', '/api/personal_api_keys/', key, { label: 'x', scopes: ['*'] });
  expect(r.status).toBe(403);
});
