// Event and property definitions over HTTP: PostHog's list shapes and filters, retrieve, delete,
// scopes, another organization's project, the refusals, and volume_30_day recounted by its job.
// The rows are the ones ingestion writes (its own test, ingestion.int.test.ts, checks that).
import { randomUUID } from 'node:crypto';
import { recountVolumes } from '../src/definitions/definition-volumes-job';
import { call, createKey, seed, startHarness, type Fixture, type Harness } from './helpers';

let h: Harness;
let f: Fixture;
let key: string;
let base: string;

const day = (n: number) => new Date(Date.now() - n * 86_400_000).toISOString();

beforeAll(async () => {
  h = await startHarness();
  f = await seed(h.prisma);
  key = await createKey(h.prisma, f.alice.id, ['event_definition:write', 'property_definition:write']);
  base = `/api/projects/${f.teamA.id}`;
  const events: [string, string | null, string][] = [
    ['$pageview', day(0), day(40)],
    ['signed up', day(2), day(20)],
    ['clicked button', day(45), day(45)],
    ['$autocapture', null, day(1)],
  ];
  for (const [name, seen, created] of events)
    await h.pool.query(
      'INSERT INTO event_definitions (team_id, name, last_seen_at, created_at) VALUES ($1, $2, $3, $4)',
      [f.teamA.id, name, seen, created],
    );
  await h.pool.query(
    `INSERT INTO event_definitions (team_id, name, last_seen_at) VALUES ($1, 'other project', now())`,
    [f.teamB.id],
  );
  const properties: [number, number, string, string | null][] = [
    [1, -1, 'plan', 'String'],
    [1, -1, 'price', 'Numeric'],
    [1, -1, '$browser', 'String'],
    [1, -1, '$feature/beta', 'String'],
    [1, -1, 'signed_up_at', 'DateTime'],
    [1, -1, 'nested', null],
    [2, -1, 'email', 'String'],
    [2, -1, 'age', 'Numeric'],
    [3, 0, 'seats', 'Numeric'],
    [3, 1, 'region', 'String'],
  ];
  for (const [type, index, name, propertyType] of properties)
    await h.pool.query(
      `INSERT INTO property_definitions (team_id, type, group_type_index, name, property_type, is_numerical)
       VALUES ($1, $2, $3, $4, $5, $5 IS NOT DISTINCT FROM 'Numeric')`,
      [f.teamA.id, type, index, name, propertyType],
    );
  for (const [event, property] of [
    ['signed up', 'plan'],
    ['signed up', 'price'],
    ['$pageview', '$browser'],
  ])
    await h.pool.query('INSERT INTO event_properties (team_id, event, property) VALUES ($1, $2, $3)', [
      f.teamA.id,
      event,
      property,
    ]);
});
afterAll(() => h.stop());

const names = (body: { results: { name: string }[] }) => body.results.map((r) => r.name);

describe('event definitions', () => {
  it("lists the project's events in PostHog's shape, last seen day first", async () => {
    const r = await call(h, 'GET', `${base}/event_definitions/`, key);
    expect(r.status).toBe(200);
    expect(r.body.count).toBe(4);
    expect(names(r.body)).toEqual(['$pageview', 'signed up', 'clicked button', '$autocapture']);
    expect(r.body.results[0]).toEqual({
      id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      name: '$pageview',
      created_at: expect.any(String),
      last_seen_at: expect.any(String),
      last_updated_at: expect.any(String),
      volume_30_day: null,
      query_usage_30_day: null,
      tags: [],
      is_action: false,
      action_id: null,
      is_calculating: false,
      last_calculated_at: null,
      created_by: null,
      post_to_slack: false,
    });
  });

  it('searches by every term, filters by type, names and staleness, orders and pages', async () => {
    const get = async (q: string) => (await call(h, 'GET', `${base}/event_definitions/?${q}`, key)).body;
    expect(names(await get('search=SIGN'))).toEqual(['signed up']);
    expect(names(await get('search=up%20sig'))).toEqual(['signed up']);
    expect(names(await get('search=%25'))).toEqual([]);
    expect(names(await get('event_type=event_custom&ordering=name'))).toEqual([
      'clicked button',
      'signed up',
    ]);
    expect(names(await get('event_type=event_posthog&ordering=-name'))).toEqual([
      '$pageview',
      '$autocapture',
    ]);
    expect(names(await get('names=signed%20up,%24pageview&ordering=name'))).toEqual([
      '$pageview',
      'signed up',
    ]);
    expect(names(await get('exclude_stale=true&ordering=name'))).toEqual([
      '$autocapture',
      '$pageview',
      'signed up',
    ]);
    expect(names(await get('ordering=created_at'))).toEqual([
      'clicked button',
      '$pageview',
      'signed up',
      '$autocapture',
    ]);
    expect(names(await get('ordering=-last_seen_at'))).toEqual([
      '$pageview',
      'signed up',
      'clicked button',
      '$autocapture',
    ]);
    // An ordering PostHog does not serve is ignored, as PostHog ignores it.
    expect(names(await get('ordering=event'))).toEqual([
      '$pageview',
      'signed up',
      'clicked button',
      '$autocapture',
    ]);
    const first = await get('limit=2&ordering=name');
    expect(first).toMatchObject({ count: 4, previous: null });
    expect(first.next).toContain('offset=2');
    expect(names(await get('limit=2&offset=2&ordering=name'))).toEqual(['clicked button', 'signed up']);
  });

  it('orders by volume_30_day once the job has counted the last 30 days', async () => {
    for (const [event, n, daysAgo] of [
      ['signed up', 3, 1],
      ['$pageview', 1, 2],
      ['$pageview', 5, 40],
    ] as const)
      for (let i = 0; i < n; i++)
        await h.pool.query(
          `INSERT INTO events (uuid, team_id, event, distinct_id, timestamp) VALUES ($1, $2, $3, 'u', $4)`,
          [randomUUID(), f.teamA.id, event, day(daysAgo)],
        );
    expect(await recountVolumes(h.pool, f.teamA.id)).toBe(4);
    const r = await call(h, 'GET', `${base}/event_definitions/?ordering=-volume_30_day`, key);
    expect(
      r.body.results.map((d: { name: string; volume_30_day: number }) => [d.name, d.volume_30_day]),
    ).toEqual([
      ['signed up', 3],
      ['$pageview', 1],
      ['$autocapture', 0],
      ['clicked button', 0],
    ]);
    // Nothing changed: nothing rewritten.
    expect(await recountVolumes(h.pool, f.teamA.id)).toBe(0);
  });

  it('retrieves and deletes one (its events stay), 404 for another project and unknown ids', async () => {
    const list = await call(h, 'GET', `${base}/event_definitions/?names=clicked%20button`, key);
    const id = list.body.results[0].id;
    expect((await call(h, 'GET', `${base}/event_definitions/${id}/`, key)).body).toMatchObject({
      id,
      name: 'clicked button',
    });
    expect((await call(h, 'GET', `/api/projects/${f.teamA2.id}/event_definitions/${id}/`, key)).status).toBe(
      404,
    );
    expect((await call(h, 'GET', `${base}/event_definitions/${randomUUID()}/`, key)).status).toBe(404);
    expect((await call(h, 'GET', `${base}/event_definitions/not-a-uuid/`, key)).status).toBe(404);
    expect((await call(h, 'DELETE', `${base}/event_definitions/${id}/`, key)).status).toBe(204);
    expect((await call(h, 'GET', `${base}/event_definitions/${id}/`, key)).status).toBe(404);
    expect((await call(h, 'DELETE', `${base}/event_definitions/${id}/`, key)).status).toBe(404);
  });

  it('needs event_definition scopes, refuses unknown filters, and hides other organizations', async () => {
    const reader = await createKey(h.prisma, f.alice.id, ['event_definition:read']);
    expect((await call(h, 'GET', `${base}/event_definitions/`, reader)).status).toBe(200);
    const del = await call(h, 'DELETE', `${base}/event_definitions/${randomUUID()}/`, reader);
    expect(del).toMatchObject({
      status: 403,
      body: { detail: "API key missing required scope 'event_definition:write'" },
    });
    const other = await createKey(h.prisma, f.alice.id, ['query:read']);
    expect((await call(h, 'GET', `${base}/event_definitions/`, other)).status).toBe(403);
    expect((await call(h, 'GET', `${base}/event_definitions/?colour=red`, key)).body).toMatchObject({
      attr: 'colour',
    });
    expect((await call(h, 'GET', `${base}/event_definitions/?event_type=actions`, key)).body).toMatchObject({
      attr: 'event_type',
    });
    expect((await call(h, 'GET', `/api/projects/${f.teamB.id}/event_definitions/`, key)).status).toBe(404);
    // The environment path answers the same.
    const env = await call(h, 'GET', `/api/environments/${f.teamA.id}/event_definitions/?ordering=name`, key);
    expect(env.status).toBe(200);
    expect(env.body.count).toBeGreaterThan(0);
  });
});

describe('property definitions', () => {
  it('lists event properties by default, in PostHog shape, by name', async () => {
    const r = await call(h, 'GET', `${base}/property_definitions/`, key);
    expect(r.status).toBe(200);
    expect(names(r.body)).toEqual(['$browser', '$feature/beta', 'nested', 'plan', 'price', 'signed_up_at']);
    expect(r.body.results.find((p: { name: string }) => p.name === 'price')).toEqual({
      id: expect.any(String),
      name: 'price',
      type: 1,
      group_type_index: null,
      is_numerical: true,
      property_type: 'Numeric',
      tags: [],
      is_seen_on_filtered_events: null,
    });
  });

  it('filters by type, group type, numeric, flags, core, names and search', async () => {
    const get = async (q: string) => (await call(h, 'GET', `${base}/property_definitions/?${q}`, key)).body;
    expect(names(await get('type=person'))).toEqual(['age', 'email']);
    expect(names(await get('type=group&group_type_index=0'))).toEqual(['seats']);
    expect((await get('type=group&group_type_index=1')).results[0]).toMatchObject({
      name: 'region',
      group_type_index: 1,
    });
    expect(names(await get('is_numerical=true'))).toEqual(['price']);
    expect(names(await get('is_feature_flag=true'))).toEqual(['$feature/beta']);
    expect(names(await get('is_feature_flag=false&exclude_core_properties=true'))).toEqual([
      'nested',
      'plan',
      'price',
      'signed_up_at',
    ]);
    expect(names(await get('properties=plan,price,unknown'))).toEqual(['plan', 'price']);
    expect(
      names(
        await get(`excluded_properties=${encodeURIComponent('["plan","nested"]')}&exclude_core_properties=1`),
      ),
    ).toEqual(['price', 'signed_up_at']);
    expect(names(await get('search=PR'))).toEqual(['price']);
    expect((await get('property_type=Numeric')).attr).toBe('property_type');
  });

  it('marks and puts first what was seen on the given events, or keeps only those', async () => {
    const events = encodeURIComponent(JSON.stringify(['signed up']));
    const marked = await call(h, 'GET', `${base}/property_definitions/?event_names=${events}`, key);
    expect(
      marked.body.results
        .slice(0, 3)
        .map((p: { name: string; is_seen_on_filtered_events: boolean }) => [
          p.name,
          p.is_seen_on_filtered_events,
        ]),
    ).toEqual([
      ['plan', true],
      ['price', true],
      ['$browser', false],
    ]);
    const only = await call(
      h,
      'GET',
      `${base}/property_definitions/?event_names=${events}&filter_by_event_names=true`,
      key,
    );
    expect(only.body).toMatchObject({ count: 2 });
    expect(names(only.body)).toEqual(['plan', 'price']);
  });

  it('refuses what it cannot read, naming the parameter', async () => {
    const get = async (q: string) => call(h, 'GET', `${base}/property_definitions/?${q}`, key);
    expect((await get('type=group')).body).toMatchObject({ attr: 'group_type_index' });
    expect((await get('type=cohort')).body).toMatchObject({ attr: 'type' });
    expect((await get('event_names=not-json')).body).toMatchObject({ attr: 'event_names' });
    expect((await get(`event_names=${encodeURIComponent('{"a":1}')}`)).body).toMatchObject({
      attr: 'event_names',
    });
    const many = encodeURIComponent(JSON.stringify(Array.from({ length: 1001 }, (_, i) => `e${i}`)));
    expect((await get(`event_names=${many}`)).status).toBe(400);
    expect((await get('group_type_index=9')).body).toMatchObject({ attr: 'group_type_index' });
  });

  it('retrieves and deletes one, with the events it was seen on', async () => {
    const list = await call(h, 'GET', `${base}/property_definitions/?properties=plan`, key);
    const id = list.body.results[0].id;
    expect((await call(h, 'GET', `${base}/property_definitions/${id}/`, key)).body).toMatchObject({
      name: 'plan',
    });
    expect((await call(h, 'DELETE', `${base}/property_definitions/${id}/`, key)).status).toBe(204);
    expect((await call(h, 'GET', `${base}/property_definitions/${id}/`, key)).status).toBe(404);
    const pairs = await h.pool.query(
      `SELECT 1 FROM event_properties WHERE team_id = $1 AND property = 'plan'`,
      [f.teamA.id],
    );
    expect(pairs.rowCount).toBe(0);
    const reader = await createKey(h.prisma, f.alice.id, ['property_definition:read']);
    expect((await call(h, 'DELETE', `${base}/property_definitions/${id}/`, reader)).status).toBe(403);
  });
});
