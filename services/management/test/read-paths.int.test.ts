// The hand-written read paths (users list/retrieve, early access feature list/retrieve through
// the pg pool, caller context from the key cache) return byte for byte the JSON of the Prisma
// implementation they replaced (kept in test/reference), for users in several organizations and
// projects, seen by members, admins and staff; and the cached context does not hide a project
// created after it was loaded.
import { generateProjectToken } from '@sett/keys';
import type { AuthContext } from '../src/auth/auth-context';
import { earlyAccessFeatureJson } from '../src/early-access-features/early-access-feature-service';
import { loadViewer } from '../src/users/viewer';
import { call, createKey, seed, startHarness, type Fixture, type Harness } from './helpers';
import { referenceUserList, userInclude, userViews } from './reference/prisma-user-views';

let h: Harness;
let f: Fixture;
const callers: { name: string; id: number; key: string }[] = [];
const targets: string[] = [];

/** The viewer as the old path built it: memberships read now, is_staff from the user row. */
async function viewerFor(userId: number) {
  const { isStaff } = await h.prisma.user.findUniqueOrThrow({ where: { id: userId } });
  return loadViewer(h.prisma, { userId, isStaff } as AuthContext);
}

async function text(path: string, key: string): Promise<{ status: number; body: string }> {
  const res = await fetch(`${h.url}${path}`, { headers: { authorization: `Bearer ${key}` } });
  return { status: res.status, body: await res.text() };
}

beforeAll(async () => {
  h = await startHarness();
  f = await seed(h.prisma);
  const p = h.prisma;
  // A third organization with two projects; "multi" belongs to A (admin), B and C, current in C.
  const orgC = await p.organization.create({
    data: { name: 'Org C', slug: `org-c-${Date.now()}`, availableProductFeatures: [{ key: 'x' }] },
  });
  const teamC1 = await p.team.create({
    data: { organizationId: orgC.id, name: 'C one', apiToken: generateProjectToken() },
  });
  await p.team.create({
    data: {
      organizationId: orgC.id,
      name: 'C two',
      apiToken: generateProjectToken(),
      hasCompletedOnboardingFor: { product_analytics: true },
    },
  });
  const multi = await p.user.create({
    data: {
      email: 'multi@c.test',
      distinctId: 'multi',
      currentOrganizationId: orgC.id,
      currentTeamId: teamC1.id,
      hedgehogConfig: { color: 'blue' },
      scenePersonalisation: [{ scene: 'Home', dashboard: 3 }],
      hasSeenProductIntroFor: { feature_flags: true },
    },
  });
  for (const [orgId, level] of [
    [f.orgA.id, 8],
    [f.orgB.id, 1],
    [orgC.id, 15],
  ] as const) {
    await p.organizationMembership.create({ data: { organizationId: orgId, userId: multi.id, level } });
  }
  // Odd rows: empty-string password (has_password false), current organization without a
  // membership, current team outside the current organization, JSON numbers written as 1.0/1e2.
  const odd = await p.user.create({
    data: {
      email: 'odd@a.test',
      distinctId: 'odd',
      password: '',
      currentOrganizationId: f.orgB.id,
      currentTeamId: f.teamA.id,
    },
  });
  await p.organizationMembership.create({ data: { organizationId: f.orgA.id, userId: odd.id } });
  await h.pool.query(
    `UPDATE users SET notification_settings = '{"b": 1.0, "a": [1e2, 2.50], "nested": {"z": null}}' WHERE id = $1`,
    [odd.id],
  );
  const noOrg = await p.user.create({ data: { email: 'none@x.test', distinctId: 'none' } });

  for (const [name, id] of [
    ['alice (member of A)', f.alice.id],
    ['adminA', f.adminA.id],
    ['bob (member of B)', f.bob.id],
    ['staff (B, is_staff)', f.staff.id],
    ['multi (A, B, C)', multi.id],
  ] as const) {
    callers.push({ name, id, key: await createKey(p, id, ['*']) });
  }
  targets.push(f.alice.uuid, f.adminA.uuid, f.bob.uuid, f.staff.uuid, multi.uuid, odd.uuid, noOrg.uuid);
});
afterAll(() => h.stop());

test('user retrieve: same JSON as the Prisma path, for every caller and target (404 when not visible)', async () => {
  let compared = 0;
  for (const c of callers) {
    const viewer = await viewerFor(c.id);
    for (const uuid of [...targets, '@me']) {
      const got = await text(`/api/users/${uuid}/`, c.key);
      const row = await h.prisma.user.findUniqueOrThrow({
        where: uuid === '@me' ? { id: c.id } : { uuid },
        include: userInclude,
      });
      const visible =
        viewer.isStaff || row.id === c.id || row.memberships.some((m) => viewer.levels.has(m.organizationId));
      if (!visible) {
        expect(got.status).toBe(404);
        continue;
      }
      expect(got.status).toBe(200);
      expect(got.body).toBe(JSON.stringify((await userViews(h.prisma, viewer, [row]))[0]));
      compared++;
    }
  }
  expect(compared).toBeGreaterThan(20);
});

test('users list: same JSON as the Prisma path, page by page, with and without is_staff', async () => {
  for (const c of callers) {
    const viewer = await viewerFor(c.id);
    for (const [qs, page, isStaff] of [
      ['limit=3', { limit: 3, offset: 0 }, undefined],
      ['limit=3&offset=3', { limit: 3, offset: 3 }, undefined],
      ['limit=100&offset=6', { limit: 100, offset: 6 }, undefined],
      ['is_staff=false', { limit: 100, offset: 0 }, false],
      ['is_staff=true', { limit: 100, offset: 0 }, true],
    ] as const) {
      const got = await call(h, 'GET', `/api/users/?${qs}`, c.key);
      expect(got.status).toBe(200);
      const want = await referenceUserList(h.prisma, viewer, page, isStaff);
      expect(got.body.count).toBe(want.count);
      expect(JSON.stringify(got.body.results)).toBe(JSON.stringify(want.results));
    }
  }
});

test('early access features: list and retrieve give the JSON of the Prisma rows', async () => {
  const [alice] = callers;
  const base = `/api/projects/${f.teamA.id}/early_access_feature/`;
  for (const name of ['One', 'Two', 'Three']) {
    expect((await call(h, 'POST', base, alice!.key, { name, description: `about ${name}` })).status).toBe(
      201,
    );
  }
  // A feature whose flag is gone (feature_flag null) and one with JSON numbers in its flag.
  await h.prisma.earlyAccessFeature.create({ data: { teamId: f.teamA.id, name: 'Flagless' } });
  await h.pool.query(
    `UPDATE feature_flags SET filters = jsonb_set(filters, '{extra}', '{"r": 50.0, "e": 1e1}') WHERE team_id = $1`,
    [f.teamA.id],
  );
  const rows = await h.prisma.earlyAccessFeature.findMany({
    where: { teamId: f.teamA.id },
    include: { featureFlag: true },
    orderBy: [{ createdAt: 'desc' }, { id: 'desc' }],
  });
  expect(rows).toHaveLength(4);
  const list = await call(h, 'GET', `${base}?limit=3`, alice!.key);
  expect(list.body.count).toBe(4);
  expect(JSON.stringify(list.body.results)).toBe(
    JSON.stringify(rows.slice(0, 3).map(earlyAccessFeatureJson)),
  );
  const last = await call(h, 'GET', `${base}?limit=3&offset=3`, alice!.key);
  expect(JSON.stringify(last.body.results)).toBe(JSON.stringify(rows.slice(3).map(earlyAccessFeatureJson)));
  for (const row of rows) {
    const got = await text(`${base}${row.id}/`, alice!.key);
    expect(got).toEqual({ status: 200, body: JSON.stringify(earlyAccessFeatureJson(row)) });
  }
  // Other organization: 404, also through a cached context.
  const bob = callers.find((c) => c.name.startsWith('bob'))!;
  expect((await text(`${base}${rows[0]!.id}/`, bob.key)).status).toBe(404);
  expect((await text(base, bob.key)).status).toBe(404);
});

test('a project created after the caller context was cached is readable at once', async () => {
  const [alice] = callers;
  expect((await call(h, 'GET', '/api/users/@me/', alice!.key)).status).toBe(200); // context cached
  const team = await h.prisma.team.create({
    data: { organizationId: f.orgA.id, name: 'A third project', apiToken: generateProjectToken() },
  });
  const r = await call(h, 'GET', `/api/projects/${team.id}/early_access_feature/`, alice!.key);
  expect(r.status).toBe(200);
  expect(r.body).toEqual({ count: 0, next: null, previous: null, results: [] });
  // The other read routes deciding from the cached context fall back to the database alike.
  const empty = { count: 0, next: null, previous: null, results: [] };
  expect((await call(h, 'GET', `/api/projects/${team.id}/feature_flags/`, alice!.key)).body).toEqual(empty);
  expect((await call(h, 'GET', `/api/projects/${team.id}/persons/`, alice!.key)).body).toEqual(empty);
  expect((await call(h, 'GET', `/api/projects/${team.id}/events/`, alice!.key)).body).toEqual({
    next: null,
    previous: null,
    results: [],
  });
  const one = await call(h, 'GET', `/api/projects/${team.id}/`, alice!.key);
  expect(one.status).toBe(200);
  expect(one.body).toMatchObject({ id: team.id, name: 'A third project', organization: f.orgA.id });
  const list = await call(h, 'GET', '/api/projects/?limit=1000', alice!.key);
  expect(list.body.results.map((t: { id: number }) => t.id)).toContain(team.id);
});

test('project reads from the cached context: same projects as membership in the database, 404 elsewhere', async () => {
  for (const c of callers) {
    const viewer = await viewerFor(c.id);
    const teams = await h.prisma.team.findMany({
      where: { organizationId: { in: [...viewer.levels.keys()] } },
      orderBy: { id: 'asc' },
    });
    const list = await call(h, 'GET', '/api/projects/', c.key);
    expect(list.body.count).toBe(teams.length);
    expect(list.body.results.map((t: { id: number }) => t.id)).toEqual(teams.map((t) => t.id));
    const all = await h.prisma.team.findMany();
    for (const t of all) {
      const member = viewer.levels.has(t.organizationId);
      for (const path of [`/api/projects/${t.id}/`, `/api/projects/${t.id}/feature_flags/`]) {
        expect([path, (await call(h, 'GET', path, c.key)).status]).toEqual([path, member ? 200 : 404]);
      }
    }
  }
});
