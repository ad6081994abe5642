// Group types and groups over HTTP, as PostHog's clients read them: the types with their display
// names and renaming them, a type's groups newest first with search and cursor pages, one group
// by key, and the property names of each type's groups; scopes and refusals.
import { call, createKey, seed, startHarness, type Fixture, type Harness } from './helpers';

let h: Harness;
let f: Fixture;
let key: string;
let base: string;

beforeAll(async () => {
  h = await startHarness();
  f = await seed(h.prisma);
  key = await createKey(h.prisma, f.alice.id, ['group:write']);
  base = `/api/projects/${f.teamA.id}`;
  await h.pool.query(
    `INSERT INTO group_type_mappings (team_id, group_type, group_type_index) VALUES ($1, 'company', 0), ($1, 'project', 1), ($2, 'company', 0)`,
    [f.teamA.id, f.teamB.id],
  );
  for (let i = 0; i < 5; i++)
    await h.pool.query(
      `INSERT INTO groups (team_id, group_type_index, group_key, group_properties, created_at)
       VALUES ($1, 0, $2, $3, now() - $4 * interval '1 hour')`,
      [f.teamA.id, `c${i}`, JSON.stringify({ name: `Company ${i}`, ...(i % 2 ? { plan: 'pro' } : {}) }), i],
    );
  await h.pool.query(
    `INSERT INTO groups (team_id, group_type_index, group_key, group_properties) VALUES ($1, 1, 'p1', '{"stars": 3}'), ($2, 0, 'b1', '{}')`,
    [f.teamA.id, f.teamB.id],
  );
});
afterAll(() => h.stop());

describe('group types', () => {
  it("lists the project's types by index, in PostHog's shape", async () => {
    const r = await call(h, 'GET', `${base}/groups_types/`, key);
    expect(r.status).toBe(200);
    expect(r.body).toEqual([
      {
        group_type: 'company',
        group_type_index: 0,
        name_singular: null,
        name_plural: null,
        detail_dashboard: null,
        default_columns: null,
      },
      {
        group_type: 'project',
        group_type_index: 1,
        name_singular: null,
        name_plural: null,
        detail_dashboard: null,
        default_columns: null,
      },
    ]);
  });

  it('renames them with update_metadata, all or none', async () => {
    const r = await call(h, 'PATCH', `${base}/groups_types/update_metadata/`, key, [
      { group_type_index: 0, name_singular: 'Company', name_plural: 'Companies', group_type: 'company' },
      { group_type_index: 1, name_plural: 'Projects' },
    ]);
    expect(r.status).toBe(200);
    expect(
      r.body.map((t: { name_singular: string | null; name_plural: string | null }) => [
        t.name_singular,
        t.name_plural,
      ]),
    ).toEqual([
      ['Company', 'Companies'],
      [null, 'Projects'],
    ]);
    const missing = await call(h, 'PATCH', `${base}/groups_types/update_metadata/`, key, [
      { group_type_index: 0, name_singular: 'Firm' },
      { group_type_index: 3, name_singular: 'Nope' },
    ]);
    expect(missing).toMatchObject({ status: 400, body: { attr: '1.group_type_index' } });
    expect((await call(h, 'GET', `${base}/groups_types/`, key)).body[0].name_singular).toBe('Company');
    expect(
      (await call(h, 'PATCH', `${base}/groups_types/update_metadata/`, key, { group_type_index: 0 })).status,
    ).toBe(400);
    expect(
      (await call(h, 'PATCH', `${base}/groups_types/update_metadata/`, key, [{ group_type_index: 9 }])).body,
    ).toMatchObject({ attr: '0.group_type_index' });
    const reader = await createKey(h.prisma, f.alice.id, ['group:read']);
    expect((await call(h, 'PATCH', `${base}/groups_types/update_metadata/`, reader, [])).status).toBe(403);
    // Another organization's project is not found.
    expect((await call(h, 'GET', `/api/projects/${f.teamB.id}/groups_types/`, key)).status).toBe(404);
  });
});

describe('groups', () => {
  it('lists a type newest first, in cursor pages that end', async () => {
    const first = await call(h, 'GET', `${base}/groups/?group_type_index=0&limit=2`, key);
    expect(first.status).toBe(200);
    expect(first.body.results.map((g: { group_key: string }) => g.group_key)).toEqual(['c0', 'c1']);
    expect(first.body.results[0]).toEqual({
      group_type_index: 0,
      group_key: 'c0',
      group_properties: { name: 'Company 0' },
      created_at: expect.any(String),
    });
    expect(first.body.previous).toBeNull();
    const seen = first.body.results.map((g: { group_key: string }) => g.group_key);
    let next: string | null = first.body.next;
    while (next) {
      const page = await call(h, 'GET', next, key);
      seen.push(...page.body.results.map((g: { group_key: string }) => g.group_key));
      next = page.body.next;
    }
    expect(seen).toEqual(['c0', 'c1', 'c2', 'c3', 'c4']);
  });

  it('searches the properties and the exact key', async () => {
    const keys = async (search: string) =>
      (
        await call(h, 'GET', `${base}/groups/?group_type_index=0&search=${encodeURIComponent(search)}`, key)
      ).body.results.map((g: { group_key: string }) => g.group_key);
    expect(await keys('PRO')).toEqual(['c1', 'c3']);
    expect(await keys('C2')).toEqual(['c2']);
    expect(await keys('%')).toEqual([]);
  });

  it('refuses a missing type, a bad cursor and unknown parameters', async () => {
    expect((await call(h, 'GET', `${base}/groups/`, key)).body).toMatchObject({ attr: 'group_type_index' });
    expect((await call(h, 'GET', `${base}/groups/?group_type_index=0&cursor=nope`, key)).body).toMatchObject({
      attr: 'cursor',
    });
    expect((await call(h, 'GET', `${base}/groups/?group_type_index=0&colour=1`, key)).body).toMatchObject({
      attr: 'colour',
    });
  });

  it('finds one group by type and key, 404 when there is none', async () => {
    const r = await call(h, 'GET', `${base}/groups/find/?group_type_index=1&group_key=p1`, key);
    expect(r.body).toMatchObject({ group_type_index: 1, group_key: 'p1', group_properties: { stars: 3 } });
    expect((await call(h, 'GET', `${base}/groups/find/?group_type_index=0&group_key=p1`, key)).status).toBe(
      404,
    );
    expect((await call(h, 'GET', `${base}/groups/find/?group_type_index=0`, key)).body).toMatchObject({
      attr: 'group_key',
    });
  });

  it("counts each type's property names", async () => {
    const r = await call(h, 'GET', `${base}/groups/property_definitions/`, key);
    expect(r.body).toEqual({
      '0': [
        { name: 'name', count: 5 },
        { name: 'plan', count: 2 },
      ],
      '1': [{ name: 'stars', count: 1 }],
    });
    const none = await createKey(h.prisma, f.alice.id, ['query:read']);
    expect((await call(h, 'GET', `${base}/groups/property_definitions/`, none)).status).toBe(403);
  });
});
