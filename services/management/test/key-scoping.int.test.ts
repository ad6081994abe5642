// Keys limited to projects or organizations (PostHog's scoped_teams / scoped_organizations):
// introspection with @current, creation within the user's memberships and the creating key's
// own limits, and the limit itself on every route of the table (derived from it, so a new
// route is covered the day it lands), under /api/projects/ and /api/environments/ alike.
import { randomUUID } from 'node:crypto';
import { managementRoutes } from '../src/routes';
import { call, createKey, seed, startHarness, type Fixture, type Harness } from './helpers';

let h: Harness;
let f: Fixture;
let teamKey: string; // alice, every scope, limited to project A
let orgKey: string; // alice, every scope, limited to organization A
let openKey: string; // alice, every scope, no limits

beforeAll(async () => {
  h = await startHarness();
  f = await seed(h.prisma);
  // alice belongs to both organizations, so only the key's limits keep her out of B.
  await h.prisma.organizationMembership.create({
    data: { organizationId: f.orgB.id, userId: f.alice.id, level: 8 },
  });
  teamKey = await createKey(h.prisma, f.alice.id, ['*'], { teams: [f.teamA.id] });
  orgKey = await createKey(h.prisma, f.alice.id, ['*'], { organizations: [f.orgA.id] });
  openKey = await createKey(h.prisma, f.alice.id, ['*']);
});
afterAll(() => h.stop());

describe('@current', () => {
  it("answers the calling key's object, with its limits, to a key holding no key scope", async () => {
    const narrow = await createKey(h.prisma, f.alice.id, ['feature_flag:read'], { teams: [f.teamA.id] });
    const r = await call(h, 'GET', '/api/personal_api_keys/@current/', narrow);
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({
      user_id: f.alice.id,
      scopes: ['feature_flag:read'],
      scoped_teams: [f.teamA.id],
      scoped_organizations: [],
      mask_value: expect.stringMatching(/^phx_\.\.\./),
    });
    expect(r.body).toHaveProperty('last_used_at');
    expect(r.body).not.toHaveProperty('value');
    // The same object as the key's own id names, for a key that may read keys.
    const byId = await call(h, 'GET', `/api/personal_api_keys/${r.body.id}/`, openKey);
    expect(byId.body).toMatchObject({ id: r.body.id, scoped_teams: [f.teamA.id] });
    expect((await call(h, 'GET', `/api/personal_api_keys/${r.body.id}/`, narrow)).status).toBe(403);
  });

  it('shows empty limits (all) for an open key and 401 without one', async () => {
    const r = await call(h, 'GET', '/api/personal_api_keys/@current/', openKey);
    expect(r.body).toMatchObject({ scoped_teams: [], scoped_organizations: [] });
    expect((await call(h, 'GET', '/api/personal_api_keys/@current/')).status).toBe(401);
  });
});

describe('creating a limited key', () => {
  it('stores the limits and answers them', async () => {
    const r = await call(h, 'POST', '/api/personal_api_keys/', openKey, {
      label: 'limited',
      scopes: ['project:read'],
      scoped_teams: [f.teamA.id, f.teamB.id],
      scoped_organizations: null,
    });
    expect(r.status).toBe(201);
    expect(r.body).toMatchObject({ scoped_teams: [f.teamA.id, f.teamB.id], scoped_organizations: [] });
    const me = await call(h, 'GET', '/api/personal_api_keys/@current/', r.body.value);
    expect(me.body.scoped_teams).toEqual([f.teamA.id, f.teamB.id]);
  });

  it('refuses projects and organizations the user does not belong to, naming the field', async () => {
    const bobKey = await createKey(h.prisma, f.bob.id, ['*']);
    const team = await call(h, 'POST', '/api/personal_api_keys/', bobKey, {
      label: 'x',
      scopes: ['*'],
      scoped_teams: [f.teamA.id],
    });
    expect(team).toMatchObject({ status: 400, body: { attr: 'scoped_teams' } });
    const org = await call(h, 'POST', '/api/personal_api_keys/', bobKey, {
      label: 'x',
      scopes: ['*'],
      scoped_organizations: [f.orgA.id],
    });
    expect(org).toMatchObject({ status: 400, body: { attr: 'scoped_organizations' } });
    const notUuid = await call(h, 'POST', '/api/personal_api_keys/', bobKey, {
      label: 'x',
      scopes: ['*'],
      scoped_organizations: ['nope'],
    });
    expect(notUuid).toMatchObject({ status: 400, body: { attr: 'scoped_organizations.0' } });
  });

  it('lets a limited key mint only keys within its own limits', async () => {
    const body = (limits: object) => ({ label: 'x', scopes: ['project:read'], ...limits });
    for (const wider of [{}, { scoped_teams: [f.teamB.id] }, { scoped_organizations: [f.orgA.id] }])
      expect((await call(h, 'POST', '/api/personal_api_keys/', teamKey, body(wider))).status).toBe(403);
    expect(
      (await call(h, 'POST', '/api/personal_api_keys/', teamKey, body({ scoped_teams: [f.teamA.id] })))
        .status,
    ).toBe(201);
    expect((await call(h, 'POST', '/api/personal_api_keys/', orgKey, body({}))).status).toBe(403);
    expect(
      (await call(h, 'POST', '/api/personal_api_keys/', orgKey, body({ scoped_teams: [f.teamA2.id] })))
        .status,
    ).toBe(201);
    expect(
      (await call(h, 'POST', '/api/personal_api_keys/', orgKey, body({ scoped_organizations: [f.orgB.id] })))
        .status,
    ).toBe(403);
  });
});

describe('lists show what the key reaches', () => {
  it('projects, organizations and the projects of an organization', async () => {
    const ids = async (key: string, path: string) =>
      ((await call(h, 'GET', path, key)).body.results as { id: number | string }[]).map((x) => x.id).sort();
    expect(await ids(openKey, '/api/projects/')).toEqual([f.teamA.id, f.teamA2.id, f.teamB.id].sort());
    expect(await ids(teamKey, '/api/projects/')).toEqual([f.teamA.id]);
    expect(await ids(orgKey, '/api/projects/')).toEqual([f.teamA.id, f.teamA2.id].sort());
    expect(await ids(openKey, '/api/organizations/')).toEqual([f.orgA.id, f.orgB.id].sort());
    expect(await ids(orgKey, '/api/organizations/')).toEqual([f.orgA.id]);
    expect(await ids(teamKey, '/api/organizations/')).toEqual([f.orgA.id]);
    expect(await ids(teamKey, `/api/organizations/${f.orgA.id}/projects/`)).toEqual([f.teamA.id]);
    expect(await ids(openKey, `/api/organizations/${f.orgB.id}/projects/`)).toEqual([f.teamB.id]);
  });
});

describe('projects of an organization', () => {
  it('creates, retrieves and refuses what is not the organization', async () => {
    const adminKey = await createKey(h.prisma, f.adminA.id, ['*']);
    const created = await call(h, 'POST', `/api/organizations/${f.orgA.id}/projects/`, adminKey, {
      name: 'Made under the organization',
    });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ name: 'Made under the organization', organization: f.orgA.id });
    const got = await call(
      h,
      'GET',
      `/api/organizations/${f.orgA.id}/projects/${created.body.id}/`,
      adminKey,
    );
    expect(got.body).toMatchObject({ id: created.body.id, api_token: created.body.api_token });
    // Another organization's project under this one, and an organization the user is not in.
    expect(
      (await call(h, 'GET', `/api/organizations/${f.orgB.id}/projects/${f.teamA.id}/`, openKey)).status,
    ).toBe(404);
    expect((await call(h, 'GET', `/api/organizations/${f.orgB.id}/projects/`, adminKey)).status).toBe(404);
    // A member (not admin) cannot create; a project-limited key cannot create either.
    const aliceMember = await createKey(h.prisma, f.alice.id, ['*']);
    expect(
      (await call(h, 'POST', `/api/organizations/${f.orgA.id}/projects/`, aliceMember, { name: 'x' })).status,
    ).toBe(403);
    const r = await call(h, 'POST', `/api/organizations/${f.orgA.id}/projects/`, teamKey, { name: 'x' });
    expect(r).toMatchObject({ status: 403, body: { detail: expect.stringContaining('scoped projects') } });
    expect((await call(h, 'POST', '/api/projects/', teamKey, { name: 'x' })).status).toBe(403);
    expect((await call(h, 'POST', '/api/organizations/', orgKey, { name: 'x' })).status).toBe(403);
  });
});

describe('every route of the table', () => {
  type Case = { method: string; path: string };
  const fill = (url: string, project: number, organization: string) =>
    url
      .replace(':project_id', String(project))
      .replace(/^\/api\/organizations\/:id/, `/api/organizations/${organization}`)
      .replace(':user_uuid', '@me')
      .replace(':uuid', randomUUID())
      .replace(':id', '1');
  const projectRoutes: Case[] = [];
  const organizationRoutes: Case[] = [];
  for (const route of managementRoutes.routes)
    for (const url of [route.url, ...(route.aliases ?? [])]) {
      if (url.includes(':project_id')) projectRoutes.push({ method: route.method, path: url });
      else if (url.startsWith('/api/organizations/:id'))
        organizationRoutes.push({ method: route.method, path: url });
    }

  it('covers the project routes under both prefixes', () => {
    expect(projectRoutes.some((c) => c.path.startsWith('/api/environments/:project_id/feature_flags/'))).toBe(
      true,
    );
    expect(projectRoutes.some((c) => c.path === '/api/environments/:project_id/query/')).toBe(true);
    expect(projectRoutes.length).toBeGreaterThan(40);
  });

  it('answers 403 naming the project outside a key limited to projects, or to organizations', async () => {
    for (const c of projectRoutes)
      for (const [key, project] of [
        [teamKey, f.teamA2.id],
        [teamKey, f.teamB.id],
        [orgKey, f.teamB.id],
      ] as const) {
        const r = await call(
          h,
          c.method,
          fill(c.path, project, f.orgA.id),
          key,
          c.method === 'GET' ? undefined : {},
        );
        expect({ ...c, project, status: r.status, detail: r.body?.detail }).toEqual({
          ...c,
          project,
          status: 403,
          detail: `API key does not have access to the requested project: ID ${project}.`,
        });
      }
  });

  it('answers reads inside the limits as it does for an open key', async () => {
    for (const c of projectRoutes.filter((x) => x.method === 'GET'))
      for (const key of [teamKey, orgKey]) {
        const path = fill(c.path, f.teamA.id, f.orgA.id);
        const [limited, open] = await Promise.all([call(h, 'GET', path, key), call(h, 'GET', path, openKey)]);
        expect({ path, status: limited.status }).toEqual({ path, status: open.status });
      }
  });

  it('answers 403 naming the organization outside a key limited to organizations', async () => {
    for (const c of organizationRoutes) {
      const r = await call(
        h,
        c.method,
        fill(c.path, f.teamB.id, f.orgB.id),
        orgKey,
        c.method === 'GET' ? undefined : {},
      );
      expect({ ...c, status: r.status, detail: r.body?.detail }).toEqual({
        ...c,
        status: 403,
        detail: `API key does not have access to the requested organization: ID ${f.orgB.id}.`,
      });
    }
    // @current resolves to the user's current organization first.
    await h.prisma.user.update({ where: { id: f.alice.id }, data: { currentOrganizationId: f.orgB.id } });
    const key = await createKey(h.prisma, f.alice.id, ['*'], { organizations: [f.orgA.id] });
    expect((await call(h, 'GET', '/api/organizations/@current/', key)).status).toBe(403);
    await h.prisma.user.update({ where: { id: f.alice.id }, data: { currentOrganizationId: f.orgA.id } });
  });

  it('lets a project-limited key read the organization of its project, and change none', async () => {
    expect((await call(h, 'GET', `/api/organizations/${f.orgA.id}/`, teamKey)).status).toBe(200);
    expect((await call(h, 'GET', `/api/organizations/${f.orgB.id}/`, teamKey)).status).toBe(403);
    const r = await call(h, 'PATCH', `/api/organizations/${f.orgA.id}/`, teamKey, { name: 'x' });
    expect(r).toMatchObject({ status: 403, body: { detail: expect.stringContaining('scoped projects') } });
  });

  it('leaves the user routes to a limited key, as PostHog does', async () => {
    expect((await call(h, 'GET', '/api/users/@me/', teamKey)).status).toBe(200);
    expect((await call(h, 'GET', '/api/personal_api_keys/', orgKey)).status).toBe(200);
  });
});
