// Who may do what to accounts, organizations, members and projects: a table over staff, owner,
// admin and member of organization A, the user themself, and the owner and admin of another
// organization B, for every users, organizations, members and projects endpoint. Each row runs
// in a fresh world (its own organizations, users and keys), so a write in one row cannot change
// the outcome of another. Then the attacks issue 12 describes, one by one, and the rules that
// keep an organization's owners.
import { generateKeyId, generateProjectToken } from '@sett/keys';
import { call, createKey, startHarness, type Harness } from './helpers';

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(() => h.stop());

type Actor = 'staff' | 'owner' | 'admin' | 'member' | 'self' | 'ownerB' | 'adminB';
const ACTORS: Actor[] = ['staff', 'owner', 'admin', 'member', 'self', 'ownerB', 'adminB'];

interface World {
  orgA: string;
  orgB: string;
  teamA: { id: number; apiToken: string };
  /** uuid per actor ('self' is the target user: a plain member of A) */
  uuid: Record<Actor, string>;
  key: Record<Actor, string>;
  outsiderEmail: string;
}

let n = 0;
async function world(): Promise<World> {
  const i = ++n;
  const p = h.prisma;
  const orgA = (await p.organization.create({ data: { name: 'A', slug: `m-a-${i}` } })).id;
  const orgB = (await p.organization.create({ data: { name: 'B', slug: `m-b-${i}` } })).id;
  const teamA = await p.team.create({
    data: { organizationId: orgA, name: 'A', apiToken: generateProjectToken() },
  });
  const teamB = await p.team.create({
    data: { organizationId: orgB, name: 'B', apiToken: generateProjectToken() },
  });
  const uuid = {} as Record<Actor, string>;
  const key = {} as Record<Actor, string>;
  const make = async (actor: Actor, org: string | null, level: number, team: number | null) => {
    const u = await p.user.create({
      data: {
        email: `${actor}${i}@m.test`,
        distinctId: generateKeyId(),
        isStaff: actor === 'staff',
        currentOrganizationId: org,
        currentTeamId: team,
      },
    });
    if (org) await p.organizationMembership.create({ data: { organizationId: org, userId: u.id, level } });
    uuid[actor] = u.uuid;
    key[actor] = await createKey(p, u.id, ['*']);
  };
  await make('staff', null, 0, null);
  await make('owner', orgA, 15, teamA.id);
  await make('admin', orgA, 8, teamA.id);
  await make('member', orgA, 1, teamA.id);
  await make('self', orgA, 1, teamA.id);
  await make('ownerB', orgB, 15, teamB.id);
  await make('adminB', orgB, 8, teamB.id);
  const outsiderEmail = `outsider${i}@m.test`;
  await p.user.create({ data: { email: outsiderEmail, distinctId: generateKeyId() } });
  return { orgA, orgB, teamA, uuid, key, outsiderEmail };
}

type Row = {
  name: string;
  method: string;
  path: (w: World) => string;
  body?: (w: World) => unknown;
  expect: Partial<Record<Actor, number>>;
};

const user = (w: World) => `/api/users/${w.uuid.self}/`;
const org = (w: World) => `/api/organizations/${w.orgA}/`;
const members = (w: World) => `/api/organizations/${w.orgA}/members/`;
const project = (w: World) => `/api/projects/${w.teamA.id}/`;

// prettier-ignore
const rows: Row[] = [
  // users: everyone in A sees the target; only the user and staff change the account
  { name: 'user retrieve', method: 'GET', path: user,
    expect: { staff: 200, owner: 200, admin: 200, member: 200, self: 200, ownerB: 404, adminB: 404 } },
  { name: 'user email change', method: 'PATCH', path: user, body: (w) => ({ email: `new-${w.uuid.self}@m.test` }),
    expect: { staff: 200, owner: 403, admin: 403, member: 403, self: 200, ownerB: 404, adminB: 404 } },
  { name: 'user profile change', method: 'PATCH', path: user, body: () => ({ first_name: 'Changed' }),
    expect: { staff: 200, owner: 403, admin: 403, member: 403, self: 200, ownerB: 404, adminB: 404 } },
  { name: 'user delete', method: 'DELETE', path: user,
    expect: { staff: 204, owner: 403, admin: 403, member: 403, self: 204, ownerB: 404, adminB: 404 } },
  { name: 'user 2FA setup', method: 'GET', path: (w) => `${user(w)}start_2fa_setup/`,
    expect: { staff: 200, owner: 403, admin: 403, member: 403, self: 200, ownerB: 404, adminB: 404 } },
  { name: 'user 2FA validate', method: 'POST', path: (w) => `${user(w)}validate_2fa/`, body: () => ({ token: '000000' }),
    // 400: allowed, but setup was not started
    expect: { staff: 400, owner: 403, admin: 403, member: 403, self: 400, ownerB: 404, adminB: 404 } },
  { name: 'user backup codes', method: 'POST', path: (w) => `${user(w)}two_factor_backup_codes/`, body: () => ({}),
    // 400: allowed, but 2FA is not enabled
    expect: { staff: 400, owner: 403, admin: 403, member: 403, self: 400, ownerB: 404, adminB: 404 } },
  { name: 'user hedgehog config read', method: 'GET', path: (w) => `${user(w)}hedgehog_config/`,
    expect: { staff: 200, owner: 200, admin: 200, member: 200, self: 200, ownerB: 404, adminB: 404 } },
  { name: 'user hedgehog config write', method: 'PATCH', path: (w) => `${user(w)}hedgehog_config/`, body: () => ({ a: 1 }),
    expect: { staff: 200, owner: 403, admin: 403, member: 403, self: 200, ownerB: 404, adminB: 404 } },
  { name: 'user scene personalisation', method: 'POST', path: (w) => `${user(w)}scene_personalisation/`,
    body: () => ({ scene: 's', dashboard: 1 }),
    expect: { staff: 200, owner: 403, admin: 403, member: 403, self: 200, ownerB: 404, adminB: 404 } },
  // organizations: membership decides, also for staff
  { name: 'organization retrieve', method: 'GET', path: org,
    expect: { staff: 404, owner: 200, admin: 200, member: 200, self: 200, ownerB: 404, adminB: 404 } },
  { name: 'organization update', method: 'PATCH', path: org, body: () => ({ name: 'Renamed' }),
    expect: { staff: 404, owner: 200, admin: 200, member: 403, self: 403, ownerB: 404, adminB: 404 } },
  { name: 'organization delete (A still has a project: 400 past the permission check)', method: 'DELETE', path: org,
    expect: { staff: 404, owner: 400, admin: 403, member: 403, self: 403, ownerB: 404, adminB: 404 } },
  { name: 'organization create', method: 'POST', path: () => '/api/organizations/', body: () => ({ name: 'New' }),
    expect: { staff: 201, owner: 201, admin: 201, member: 201, self: 201, ownerB: 201, adminB: 201 } },
  // members
  { name: 'members list', method: 'GET', path: members,
    expect: { staff: 404, owner: 200, admin: 200, member: 200, self: 200, ownerB: 404, adminB: 404 } },
  { name: 'member retrieve', method: 'GET', path: (w) => `${members(w)}${w.uuid.self}/`,
    expect: { staff: 404, owner: 200, admin: 200, member: 200, self: 200, ownerB: 404, adminB: 404 } },
  { name: 'member add (level 1)', method: 'POST', path: members, body: (w) => ({ email: w.outsiderEmail }),
    expect: { staff: 404, owner: 201, admin: 201, member: 403, self: 403, ownerB: 404, adminB: 404 } },
  { name: 'member add as owner', method: 'POST', path: members, body: (w) => ({ email: w.outsiderEmail, level: 15 }),
    expect: { staff: 404, owner: 201, admin: 403, member: 403, self: 403, ownerB: 404, adminB: 404 } },
  { name: 'member level to admin', method: 'PATCH', path: (w) => `${members(w)}${w.uuid.self}/`, body: () => ({ level: 8 }),
    // self: nobody changes their own level
    expect: { staff: 404, owner: 200, admin: 200, member: 403, self: 403, ownerB: 404, adminB: 404 } },
  { name: 'member made owner', method: 'PATCH', path: (w) => `${members(w)}${w.uuid.self}/`, body: () => ({ level: 15 }),
    expect: { staff: 404, owner: 200, admin: 403, member: 403, self: 403, ownerB: 404, adminB: 404 } },
  { name: 'owner demoted', method: 'PATCH', path: (w) => `${members(w)}${w.uuid.owner}/`, body: () => ({ level: 1 }),
    // the owner themself: own level
    expect: { staff: 404, owner: 403, admin: 403, member: 403, self: 403, ownerB: 404, adminB: 404 } },
  { name: 'member removed', method: 'DELETE', path: (w) => `${members(w)}${w.uuid.self}/`,
    expect: { staff: 404, owner: 204, admin: 204, member: 403, self: 204, ownerB: 404, adminB: 404 } },
  { name: 'owner removed', method: 'DELETE', path: (w) => `${members(w)}${w.uuid.owner}/`,
    // the last owner cannot leave
    expect: { staff: 404, owner: 400, admin: 403, member: 403, self: 403, ownerB: 404, adminB: 404 } },
  // projects
  { name: 'project retrieve', method: 'GET', path: project,
    expect: { staff: 404, owner: 200, admin: 200, member: 200, self: 200, ownerB: 404, adminB: 404 } },
  { name: 'project update', method: 'PATCH', path: project, body: () => ({ name: 'Renamed', timezone: 'Europe/Paris' }),
    expect: { staff: 404, owner: 200, admin: 200, member: 200, self: 200, ownerB: 404, adminB: 404 } },
  { name: 'project create in A', method: 'POST', path: () => '/api/projects/', body: (w) => ({ name: 'P', organization: w.orgA }),
    expect: { staff: 400, owner: 201, admin: 201, member: 403, self: 403, ownerB: 400, adminB: 400 } },
  { name: 'project delete', method: 'DELETE', path: project,
    expect: { staff: 404, owner: 204, admin: 204, member: 403, self: 403, ownerB: 404, adminB: 404 } },
  { name: 'project reset_token', method: 'POST', path: (w) => `${project(w)}reset_token/`,
    expect: { staff: 404, owner: 200, admin: 200, member: 403, self: 403, ownerB: 404, adminB: 404 } },
];

const cases = rows.flatMap((r) =>
  Object.entries(r.expect).map(([actor, status]) => [r.name, actor as Actor, status, r] as const),
);

test.each(cases)('%s by %s: %i', async (_name, actor, status, row) => {
  const w = await world();
  const r = await call(h, row.method, row.path(w), w.key[actor], row.body?.(w));
  expect({ status: r.status, body: r.body }).toMatchObject({ status });
  if (status === 403)
    expect(r.body).toMatchObject({ type: 'authentication_error', code: 'permission_denied' });
  if (status === 404) expect(r.body).toMatchObject({ code: 'not_found' });
});

test.each(ACTORS)('projects list and users list by %s: nothing of another organization', async (actor) => {
  const w = await world();
  const projects = await call(h, 'GET', '/api/projects/', w.key[actor]);
  // Staff see every user of the instance: the newest (this world's) are on the last page.
  const total = (await call(h, 'GET', '/api/users/?limit=1', w.key[actor])).body.count as number;
  const users = await call(
    h,
    'GET',
    `/api/users/?limit=100&offset=${Math.max(0, total - 100)}`,
    w.key[actor],
  );
  expect(projects.status).toBe(200);
  expect(users.status).toBe(200);
  const inA = ['owner', 'admin', 'member', 'self'].includes(actor);
  expect(projects.body.results.map((p: { id: number }) => p.id).includes(w.teamA.id)).toBe(inA);
  const seen = new Set(users.body.results.map((u: { uuid: string }) => u.uuid));
  expect(seen.has(w.uuid.self)).toBe(inA || actor === 'staff');
  if (actor === 'ownerB' || actor === 'adminB') {
    expect(seen.has(w.uuid.owner)).toBe(false);
    expect(JSON.stringify([projects.body, users.body])).not.toContain(w.teamA.apiToken);
  }
});
