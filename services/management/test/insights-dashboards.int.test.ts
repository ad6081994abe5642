// Saved insights, dashboards and annotations over HTTP, in PostHog's shapes: an insight's query
// is checked before it is saved, its result comes from the query engine per ?refresh= (cached
// only by default), lists filter as PostHog's do, an insight goes on dashboards through its
// `dashboards` field or a dashboard's tiles, a dashboard computes its tiles' results, deletes are
// soft, and annotations are seen by the projects their scope covers.
import { randomUUID } from 'node:crypto';
import { call, createKey, seed, startHarness, type Fixture, type Harness } from './helpers';

let h: Harness;
let f: Fixture;
let key: string;
let base: string;

const day = (d: number, hour = 12) => new Date(Date.UTC(2026, 10, d, hour)).toISOString();
const trends = (event: string) => ({
  kind: 'InsightVizNode',
  source: {
    kind: 'TrendsQuery',
    series: [{ kind: 'EventsNode', event, math: 'total' }],
    dateRange: { date_from: '2026-11-10', date_to: '2026-11-12' },
    interval: 'day',
  },
});

beforeAll(async () => {
  h = await startHarness();
  f = await seed(h.prisma);
  key = await createKey(h.prisma, f.alice.id, [
    'insight:write',
    'dashboard:write',
    'annotation:write',
    'query:read',
  ]);
  base = `/api/projects/${f.teamA.id}`;
  // view: 2 on the 10th, 1 on the 11th, 3 on the 12th; signup: 1 on the 11th.
  const rows: Array<[string, string]> = [
    ['view', day(10)],
    ['view', day(10, 13)],
    ['view', day(11)],
    ['view', day(12)],
    ['view', day(12, 1)],
    ['view', day(12, 2)],
    ['signup', day(11)],
  ];
  for (const [event, at] of rows)
    await h.pool.query(
      `INSERT INTO events (uuid, team_id, event, distinct_id, timestamp, properties) VALUES ($1, $2, $3, 'u1', $4, '{}')`,
      [randomUUID(), f.teamA.id, event, at],
    );
});
afterAll(() => h.stop());

describe('insights', () => {
  let views: { id: number; short_id: string };

  it('saves an insight in PostHog shape, with its result', async () => {
    const r = await call(h, 'POST', `${base}/insights/`, key, {
      name: 'Views',
      description: 'page views per day',
      query: trends('view'),
      favorited: true,
      saved: true,
      tags: ['core'],
    });
    expect(r.status).toBe(201);
    expect(r.body).toMatchObject({
      name: 'Views',
      description: 'page views per day',
      query: trends('view'),
      filters: {},
      deleted: false,
      dashboards: [],
      favorited: true,
      saved: true,
      tags: ['core'],
      created_by: { id: f.alice.id, uuid: f.alice.uuid },
      is_cached: false,
      query_status: null,
    });
    expect(r.body.short_id).toMatch(/^[A-Za-z0-9]{8}$/);
    expect(r.body.result).toHaveLength(1);
    expect(r.body.result[0]).toMatchObject({ data: [2, 1, 3], count: 6 });
    views = r.body;
  });

  it('answers from the cache by default, and computes again on ?refresh=force_blocking', async () => {
    const cached = await call(h, 'GET', `${base}/insights/${views.id}/`, key);
    expect(cached.status).toBe(200);
    expect(cached.body.result[0]).toMatchObject({ data: [2, 1, 3], count: 6 });
    expect(cached.body.is_cached).toBe(true);
    expect(cached.body.last_refresh).toBe((views as unknown as { last_refresh: string }).last_refresh);
    const fresh = await call(h, 'GET', `${base}/insights/${views.id}/?refresh=force_blocking`, key);
    expect(fresh.body.is_cached).toBe(false);
    expect(fresh.body.result[0].count).toBe(6);
    const cachedOnly = await call(h, 'GET', `${base}/insights/${views.id}/?refresh=force_cache`, key);
    expect(cachedOnly.body.is_cached).toBe(true);
  });

  it('refuses a query /query/ would refuse, and legacy filters, naming the field', async () => {
    const bad = await call(h, 'POST', `${base}/insights/`, key, {
      name: 'x',
      query: { kind: 'InsightVizNode', source: { kind: 'TrendsQuery', series: [], nope: 1 } },
    });
    expect(bad.status).toBe(400);
    expect(bad.body).toMatchObject({ type: 'validation_error' });
    const legacy = await call(h, 'POST', `${base}/insights/`, key, {
      name: 'x',
      filters: { insight: 'TRENDS', events: [{ id: 'view' }] },
    });
    expect(legacy).toMatchObject({ status: 400, body: { attr: 'filters' } });
    // PostHog's clients send filters: {} with a query: accepted.
    const empty = await call(h, 'POST', `${base}/insights/`, key, {
      name: 'Signups',
      query: trends('signup'),
      filters: {},
    });
    expect(empty.status).toBe(201);
  });

  it("filters the list as PostHog's does: saved, favorited, search, short_id, basic", async () => {
    const list = (q: string) => call(h, 'GET', `${base}/insights/?${q}`, key);
    const names = (r: { body: { results: Array<{ name: string }> } }) =>
      r.body.results.map((i) => i.name).sort();
    expect(names(await list(''))).toEqual(['Signups', 'Views']);
    expect(names(await list('saved=true'))).toEqual(['Views']);
    expect(names(await list('favorited=false'))).toEqual(['Signups']);
    expect(names(await list('search=PAGE%20per'))).toEqual(['Views']);
    expect(names(await list('search=page%20signup'))).toEqual([]);
    const byShort = await list(`short_id=${views.short_id}`);
    expect(byShort.body).toMatchObject({ count: 1, results: [{ id: views.id }] });
    // The list carries cached results; basic leaves them out.
    expect(byShort.body.results[0].result[0].count).toBe(6);
    const basic = await list('basic=true');
    expect(basic.body.results[0]).not.toHaveProperty('result');
    expect((await list('saved=maybe')).status).toBe(400);
  });

  it('a list computes with refresh and reports a failing one in its own query_status', async () => {
    // An insight saved before a rule changed: its query is no longer one the engine takes.
    const stale = await h.pool.query<{ id: number }>(
      `INSERT INTO insights (team_id, short_id, name, query, created_by_id, last_modified_by_id)
       VALUES ($1, 'stale001', 'Stale', '{"kind": "TrendsQuery", "series": [], "retired": true}', $2, $2)
       RETURNING id`,
      [f.teamA.id, f.alice.id],
    );
    // Checked before any cache is read: even cached-only says what is wrong with it.
    const cachedOnly = await call(h, 'GET', `${base}/insights/?short_id=stale001`, key);
    expect(cachedOnly.body.results[0]).toMatchObject({ result: null, query_status: { error: true } });
    const r = await call(h, 'GET', `${base}/insights/?refresh=force_blocking`, key);
    expect(r.status).toBe(200);
    const staleJson = r.body.results.find((i: { name: string }) => i.name === 'Stale');
    expect(staleJson.result).toBeNull();
    expect(staleJson.query_status).toEqual({ error: true, error_message: expect.stringMatching(/retired/) });
    // Alone, it is still readable (and so fixable), its error in the same place.
    const one = await call(h, 'GET', `${base}/insights/${stale.rows[0]!.id}/?refresh=blocking`, key);
    expect(one.status).toBe(200);
    expect(one.body.query_status.error).toBe(true);
    expect(
      (await call(h, 'PATCH', `${base}/insights/${stale.rows[0]!.id}/`, key, { deleted: true })).status,
    ).toBe(200);
    const byName = Object.fromEntries(
      r.body.results.map((i: { name: string; result: Array<{ count: number }> }) => [i.name, i]),
    );
    expect(byName.Signups.result[0].count).toBe(1);
    expect(byName.Views.result[0].count).toBe(6);
    expect(byName.Views.query_status).toBeNull();
  });

  it('updates fields and soft-deletes: a deleted insight is gone from reads', async () => {
    const created = await call(h, 'POST', `${base}/insights/`, key, { name: 'Temp', query: trends('view') });
    const id = created.body.id;
    const renamed = await call(h, 'PATCH', `${base}/insights/${id}/`, key, {
      name: 'Temporary',
      favorited: true,
    });
    expect(renamed.body).toMatchObject({ name: 'Temporary', favorited: true });
    expect(renamed.body.last_modified_by.id).toBe(f.alice.id);
    const deleted = await call(h, 'PATCH', `${base}/insights/${id}/`, key, { deleted: true });
    expect(deleted).toMatchObject({ status: 200, body: { deleted: true } });
    expect((await call(h, 'GET', `${base}/insights/${id}/`, key)).status).toBe(404);
    expect((await call(h, 'PATCH', `${base}/insights/${id}/`, key, { name: 'back' })).status).toBe(404);
    const list = await call(h, 'GET', `${base}/insights/?basic=true`, key);
    expect(list.body.results.map((i: { id: number }) => i.id)).not.toContain(id);
  });

  it("keeps to the key's scopes and the caller's projects", async () => {
    const readOnly = await createKey(h.prisma, f.alice.id, ['insight:read']);
    expect((await call(h, 'GET', `${base}/insights/${views.id}/`, readOnly)).status).toBe(200);
    expect((await call(h, 'POST', `${base}/insights/`, readOnly, { name: 'no' })).status).toBe(403);
    const bob = await createKey(h.prisma, f.bob.id, ['insight:read']);
    expect([403, 404]).toContain((await call(h, 'GET', `${base}/insights/${views.id}/`, bob)).status);
    // An insight id of another project answers 404 in this one.
    expect((await call(h, 'GET', `/api/projects/${f.teamA2.id}/insights/${views.id}/`, key)).status).toBe(
      404,
    );
  });
});

describe('dashboards', () => {
  let dashboardId: number;
  let viewsId: number;
  let signupsId: number;

  beforeAll(async () => {
    const list = await call(h, 'GET', `${base}/insights/?basic=true`, key);
    const byName = Object.fromEntries(
      list.body.results.map((i: { name: string; id: number }) => [i.name, i.id]),
    );
    viewsId = byName.Views;
    signupsId = byName.Signups;
  });

  it('creates a dashboard, and an insight joins it through its dashboards field', async () => {
    const r = await call(h, 'POST', `${base}/dashboards/`, key, {
      name: 'Growth',
      description: 'the numbers',
      pinned: true,
      tags: ['team'],
    });
    expect(r.status).toBe(201);
    expect(r.body).toMatchObject({
      name: 'Growth',
      description: 'the numbers',
      pinned: true,
      tags: ['team'],
      tiles: [],
      filters: {},
      deleted: false,
    });
    dashboardId = r.body.id;
    const placed = await call(h, 'PATCH', `${base}/insights/${viewsId}/`, key, { dashboards: [dashboardId] });
    expect(placed.body.dashboards).toEqual([dashboardId]);
    expect(placed.body.dashboard_tiles).toEqual([
      { id: expect.any(Number), dashboard_id: dashboardId, deleted: false },
    ]);
    // Placing it again adds no second tile.
    await call(h, 'PATCH', `${base}/insights/${viewsId}/`, key, { dashboards: [dashboardId] });
    const got = await call(h, 'GET', `${base}/dashboards/${dashboardId}/`, key);
    expect(got.body.tiles).toHaveLength(1);
    expect(
      (await call(h, 'PATCH', `${base}/insights/${viewsId}/`, key, { dashboards: [dashboardId, 999_999] }))
        .body,
    ).toMatchObject({ attr: 'dashboards' });
  });

  it('adds insight and text tiles through PATCH tiles, and computes every insight tile', async () => {
    const r = await call(h, 'PATCH', `${base}/dashboards/${dashboardId}/?refresh=blocking`, key, {
      tiles: [{ insight: signupsId }, { text: { body: '## Notes' }, color: 'blue' }],
    });
    expect(r.status).toBe(200);
    expect(r.body.tiles).toHaveLength(3);
    const [views, signups, text] = r.body.tiles;
    expect(views.insight).toMatchObject({ id: viewsId, result: [{ count: 6 }] });
    expect(signups.insight).toMatchObject({ id: signupsId, result: [{ count: 1 }] });
    expect(text).toMatchObject({ insight: null, text: { body: '## Notes' }, color: 'blue', order: 2 });
    expect(views.error).toBeNull();
    // Then the cached results by default.
    const cached = await call(h, 'GET', `${base}/dashboards/${dashboardId}/`, key);
    expect(cached.body.tiles[0]).toMatchObject({ is_cached: true, insight: { result: [{ count: 6 }] } });
    // The insight knows the dashboard it is on.
    expect((await call(h, 'GET', `${base}/insights/${signupsId}/`, key)).body.dashboards).toEqual([
      dashboardId,
    ]);
  });

  it('changes a tile, removes one, and refuses what it does not serve', async () => {
    const before = (await call(h, 'GET', `${base}/dashboards/${dashboardId}/`, key)).body.tiles;
    const text = before[2];
    const r = await call(h, 'PATCH', `${base}/dashboards/${dashboardId}/`, key, {
      tiles: [
        { id: text.id, text: { body: 'Edited' }, layouts: { sm: { x: 0, y: 0, w: 6, h: 5 } } },
        { id: before[1].id, deleted: true },
      ],
    });
    expect(r.status).toBe(200);
    expect(r.body.tiles.map((t: { id: number }) => t.id)).toEqual([before[0].id, text.id]);
    expect(r.body.tiles[1]).toMatchObject({ text: { body: 'Edited' }, layouts: { sm: { w: 6 } } });
    const missing = await call(h, 'PATCH', `${base}/dashboards/${dashboardId}/`, key, {
      tiles: [{ id: 999_999, color: 'red' }],
    });
    expect(missing).toMatchObject({ status: 400, body: { attr: 'tiles.0.id' } });
    const filters = await call(h, 'PATCH', `${base}/dashboards/${dashboardId}/`, key, {
      filters: { date_from: '-7d' },
    });
    expect(filters).toMatchObject({ status: 400, body: { attr: 'filters' } });
    expect((await call(h, 'PATCH', `${base}/dashboards/${dashboardId}/`, key, { filters: {} })).status).toBe(
      200,
    );
  });

  it('lists pinned first, searches by name', async () => {
    await call(h, 'POST', `${base}/dashboards/`, key, { name: 'Another' });
    const all = await call(h, 'GET', `${base}/dashboards/`, key);
    expect(all.body.results.map((d: { name: string }) => d.name)).toEqual(['Growth', 'Another']);
    const found = await call(h, 'GET', `${base}/dashboards/?search=grow`, key);
    expect(found.body).toMatchObject({ count: 1, results: [{ id: dashboardId }] });
    const pinned = await call(h, 'GET', `${base}/dashboards/?pinned=false`, key);
    expect(pinned.body.results.map((d: { name: string }) => d.name)).toEqual(['Another']);
  });

  it('deletes softly, with the insights on no other dashboard when asked', async () => {
    const other = await call(h, 'POST', `${base}/dashboards/`, key, { name: 'Keep' });
    await call(h, 'PATCH', `${base}/insights/${signupsId}/`, key, {
      dashboards: [dashboardId, other.body.id],
    });
    const r = await call(h, 'PATCH', `${base}/dashboards/${dashboardId}/`, key, {
      deleted: true,
      delete_insights: true,
    });
    expect(r).toMatchObject({ status: 200, body: { deleted: true } });
    expect((await call(h, 'GET', `${base}/dashboards/${dashboardId}/`, key)).status).toBe(404);
    // Views was only here: deleted. Signups is also on Keep: kept, and no longer lists Growth.
    expect((await call(h, 'GET', `${base}/insights/${viewsId}/`, key)).status).toBe(404);
    const signups = await call(h, 'GET', `${base}/insights/${signupsId}/`, key);
    expect(signups.body.dashboards).toEqual([other.body.id]);
  });

  it('needs dashboard scopes', async () => {
    const insightsOnly = await createKey(h.prisma, f.alice.id, ['insight:read']);
    expect((await call(h, 'GET', `${base}/dashboards/`, insightsOnly)).status).toBe(403);
    const readOnly = await createKey(h.prisma, f.alice.id, ['dashboard:read']);
    expect((await call(h, 'POST', `${base}/dashboards/`, readOnly, { name: 'no' })).status).toBe(403);
  });
});

describe('annotations', () => {
  const a2 = () => `/api/projects/${f.teamA2.id}`;

  it('a project annotation is seen in its project; an organization one in all of its projects', async () => {
    const project = await call(h, 'POST', `${base}/annotations/`, key, {
      content: 'release 1.2',
      date_marker: day(11),
    });
    expect(project.status).toBe(201);
    expect(project.body).toMatchObject({
      content: 'release 1.2',
      scope: 'project',
      creation_type: 'USR',
      date_marker: day(11),
      dashboard_item: null,
      created_by: { id: f.alice.id },
      deleted: false,
    });
    const org = await call(h, 'POST', `${base}/annotations/`, key, {
      content: 'pricing change',
      date_marker: day(12),
      scope: 'organization',
    });
    expect(org.status).toBe(201);
    const inA = await call(h, 'GET', `${base}/annotations/`, key);
    expect(inA.body.results.map((a: { content: string }) => a.content)).toEqual([
      'pricing change',
      'release 1.2',
    ]);
    const inA2 = await call(h, 'GET', `${a2()}/annotations/`, key);
    expect(inA2.body.results.map((a: { content: string }) => a.content)).toEqual(['pricing change']);
    expect((await call(h, 'GET', `${a2()}/annotations/${project.body.id}/`, key)).status).toBe(404);
    const bob = await createKey(h.prisma, f.bob.id, ['annotation:read']);
    const inB = await call(h, 'GET', `/api/projects/${f.teamB.id}/annotations/`, bob);
    expect(inB.body.results).toEqual([]);
    expect((await call(h, 'GET', `${base}/annotations/?search=PRICING`, key)).body.count).toBe(1);
    expect((await call(h, 'GET', `${base}/annotations/?scope=organization`, key)).body.count).toBe(1);
    // Seen from the organization's other project, changed only from the one that made it.
    expect(
      (await call(h, 'PATCH', `${a2()}/annotations/${org.body.id}/`, key, { content: 'hijack' })).status,
    ).toBe(404);
  });

  it('an insight annotation names its insight; the target must exist in the project', async () => {
    const insight = await call(h, 'POST', `${base}/insights/`, key, {
      name: 'Target',
      query: trends('view'),
    });
    const r = await call(h, 'POST', `${base}/annotations/`, key, {
      content: 'spike',
      date_marker: day(10),
      scope: 'dashboard_item',
      dashboard_item: insight.body.id,
    });
    expect(r.status).toBe(201);
    expect(r.body).toMatchObject({
      dashboard_item: insight.body.id,
      insight_short_id: insight.body.short_id,
      insight_name: 'Target',
    });
    const none = await call(h, 'POST', `${base}/annotations/`, key, {
      content: 'x',
      scope: 'dashboard_item',
    });
    expect(none).toMatchObject({ status: 400, body: { attr: 'dashboard_item' } });
    const foreign = await call(h, 'POST', `${a2()}/annotations/`, key, {
      content: 'x',
      scope: 'dashboard_item',
      dashboard_item: insight.body.id,
    });
    expect(foreign).toMatchObject({ status: 400, body: { attr: 'dashboard_item' } });
    const badDate = await call(h, 'POST', `${base}/annotations/`, key, { content: 'x', date_marker: 'soon' });
    expect(badDate).toMatchObject({ status: 400, body: { attr: 'date_marker' } });
  });

  it('updates and soft-deletes', async () => {
    const created = await call(h, 'POST', `${base}/annotations/`, key, {
      content: 'typo',
      date_marker: day(10),
    });
    const fixed = await call(h, 'PATCH', `${base}/annotations/${created.body.id}/`, key, {
      content: 'fixed',
    });
    expect(fixed.body.content).toBe('fixed');
    expect(
      (await call(h, 'PATCH', `${base}/annotations/${created.body.id}/`, key, { deleted: true })).status,
    ).toBe(200);
    expect((await call(h, 'GET', `${base}/annotations/${created.body.id}/`, key)).status).toBe(404);
    const readOnly = await createKey(h.prisma, f.alice.id, ['annotation:read']);
    expect((await call(h, 'POST', `${base}/annotations/`, readOnly, { content: 'no' })).status).toBe(403);
  });
});
