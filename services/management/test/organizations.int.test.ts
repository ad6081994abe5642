// Organizations and members through the API: PostHog's shapes, `@current`, the creator as owner,
// members keyed by user uuid, and the rules that keep owners: removing a member is not deleting
// the user, owners are changed only by owners, and an organization never loses its last owner
// (not even when that owner deletes their own account). Then the attacks of issue 12, replayed.
import { Secret, TOTP } from 'otpauth';
import { call, createKey, seed, startHarness, type Fixture, type Harness } from './helpers';

let h: Harness;
let f: Fixture;
let aliceKey: string;
let adminKey: string;
let bobKey: string;

beforeAll(async () => {
  h = await startHarness();
  f = await seed(h.prisma);
  aliceKey = await createKey(h.prisma, f.alice.id, ['*']);
  adminKey = await createKey(h.prisma, f.adminA.id, ['*']);
  bobKey = await createKey(h.prisma, f.bob.id, ['*']);
});
afterAll(() => h.stop());

test('POST creates an organization owned by its creator, with a first project, and @current names it', async () => {
  const created = await call(h, 'POST', '/api/organizations/', bobKey, { name: 'Bob Co' });
  expect(created.status).toBe(201);
  expect(created.body).toMatchObject({
    id: expect.any(String),
    name: 'Bob Co',
    slug: expect.stringMatching(/^bob-co-[0-9a-f]{8}$/),
    membership_level: 15,
    member_count: '1',
    teams: [expect.objectContaining({ name: 'Default project', api_token: expect.stringMatching(/^phc_/) })],
    projects: [expect.objectContaining({ name: 'Default project' })],
  });
  for (const field of ['created_at', 'updated_at', 'plugins_access_level', 'available_product_features'])
    expect(created.body).toHaveProperty(field);
  const current = await call(h, 'GET', '/api/organizations/@current/', bobKey);
  expect(current.body.id).toBe(created.body.id);
  const me = await call(h, 'GET', '/api/users/@me/', bobKey);
  expect(me.body.organization.id).toBe(created.body.id);
  expect(me.body.team.id).toBe(created.body.teams[0].id);
  // Both of bob's organizations are listed, with his level in each.
  const list = await call(h, 'GET', '/api/organizations/', bobKey);
  expect(list.body.count).toBe(2);
  expect(list.body.results.map((o: { id: string }) => o.id).sort()).toEqual(
    [f.orgB.id, created.body.id].sort(),
  );
  // A second organization with the same name is another organization.
  const again = await call(h, 'POST', '/api/organizations/', aliceKey, { name: 'Bob Co' });
  expect(again.body.id).not.toBe(created.body.id);
  expect(again.body.member_count).toBe('1');
});

test('PATCH is for admins; validation names the field', async () => {
  expect((await call(h, 'PATCH', `/api/organizations/${f.orgA.id}/`, aliceKey, { name: 'x' })).status).toBe(
    403,
  );
  const r = await call(h, 'PATCH', `/api/organizations/${f.orgA.id}/`, adminKey, {
    name: 'Org A renamed',
    enforce_2fa: true,
  });
  expect(r.body).toMatchObject({ name: 'Org A renamed', enforce_2fa: true, membership_level: 8 });
  // slug is read-only in PostHog: ignored, not changed.
  const slugged = await call(h, 'PATCH', `/api/organizations/${f.orgA.id}/`, adminKey, { slug: 'x' });
  expect(slugged.status).toBe(200);
  expect(slugged.body.slug).not.toBe('x');
  expect((await call(h, 'PATCH', `/api/organizations/${f.orgA.id}/`, adminKey, { name: '' })).status).toBe(
    400,
  );
});

test('members: PostHog shape, keyed by user uuid and @me', async () => {
  const list = await call(h, 'GET', `/api/organizations/${f.orgA.id}/members/`, aliceKey);
  expect(list.status).toBe(200);
  expect(list.body.count).toBe(2);
  // PostHog's order: level ascending.
  expect(list.body.results.map((m: { level: number }) => m.level)).toEqual([1, 8]);
  expect(list.body.results[0]).toEqual({
    id: expect.any(String),
    user: {
      id: f.alice.id,
      uuid: f.alice.uuid,
      distinct_id: expect.any(String),
      first_name: expect.any(String),
      last_name: '',
      email: expect.stringContaining('alice'),
      is_email_verified: false,
      hedgehog_config: null,
      role_at_organization: null,
    },
    level: 1,
    joined_at: expect.any(String),
    updated_at: expect.any(String),
    is_2fa_enabled: false,
    has_social_auth: false,
    last_login: null,
  });
  const me = await call(h, 'GET', `/api/organizations/@current/members/@me/`, aliceKey);
  expect(me.body.user.uuid).toBe(f.alice.uuid);
  expect((await call(h, 'GET', `/api/organizations/${f.orgA.id}/members/not-a-uuid/`, aliceKey)).status).toBe(
    404,
  );
});

test('adding, changing and removing members; removing is not deleting the user', async () => {
  const carol = await h.prisma.user.create({ data: { email: 'carol@c.test', distinctId: 'carol' } });
  const base = `/api/organizations/${f.orgA.id}/members/`;
  const added = await call(h, 'POST', base, adminKey, { email: 'Carol@C.test', level: 8 });
  expect(added).toMatchObject({ status: 201, body: { level: 8, user: { uuid: carol.uuid } } });
  // Joining gave carol a current organization and project.
  const row = await h.prisma.user.findUniqueOrThrow({ where: { id: carol.id } });
  expect(row.currentOrganizationId).toBe(f.orgA.id);
  expect(row.currentTeamId).toBe(f.teamA.id);
  expect((await call(h, 'POST', base, adminKey, { email: 'carol@c.test' })).body).toMatchObject({
    attr: 'email',
    code: 'unique',
  });
  expect((await call(h, 'POST', base, adminKey, { email: 'nobody@c.test' })).body).toMatchObject({
    attr: 'email',
    code: 'does_not_exist',
  });
  expect((await call(h, 'POST', base, adminKey, { email: 'carol@c.test', level: 3 })).status).toBe(400);
  const demoted = await call(h, 'PATCH', `${base}${carol.uuid}/`, adminKey, { level: 1 });
  expect(demoted).toMatchObject({ status: 200, body: { level: 1 } });
  expect((await call(h, 'DELETE', `${base}${carol.uuid}/`, adminKey)).status).toBe(204);
  expect(await h.prisma.user.count({ where: { id: carol.id } })).toBe(1);
  const after = await h.prisma.user.findUniqueOrThrow({ where: { id: carol.id } });
  expect(after.currentOrganizationId).toBeNull();
  expect(after.currentTeamId).toBeNull();
  expect((await call(h, 'GET', `${base}${carol.uuid}/`, adminKey)).status).toBe(404);
});

test('an organization never loses its last owner', async () => {
  const owner = await h.prisma.user.create({ data: { email: 'owner@o.test', distinctId: 'owner-o' } });
  const org = await h.prisma.organization.create({ data: { name: 'Owned', slug: 'owned-o' } });
  await h.prisma.organizationMembership.create({
    data: { organizationId: org.id, userId: owner.id, level: 15 },
  });
  const ownerKey = await createKey(h.prisma, owner.id, ['*']);
  const base = `/api/organizations/${org.id}/members/`;
  // Leaving, and deleting one's own account, are refused for the sole owner.
  expect((await call(h, 'DELETE', `${base}@me/`, ownerKey)).body).toMatchObject({ code: 'last_owner' });
  const del = await call(h, 'DELETE', '/api/users/@me/', ownerKey);
  expect(del).toMatchObject({ status: 400, body: { type: 'validation_error', code: 'last_owner' } });
  expect(del.body.detail).toContain('Owned');
  // Staff cannot delete that account either.
  const staffKey = await createKey(h.prisma, f.staff.id, ['*']);
  expect((await call(h, 'DELETE', `/api/users/${owner.uuid}/`, staffKey)).body).toMatchObject({
    code: 'last_owner',
  });
  // With a second owner, the first may go.
  await call(h, 'POST', base, ownerKey, {
    email: (await h.prisma.user.findUniqueOrThrow({ where: { id: f.alice.id } })).email,
    level: 15,
  });
  // Two owners demoting each other at once: at most one succeeds, one owner is always left.
  const [a, b] = await Promise.all([
    call(h, 'PATCH', `${base}${f.alice.uuid}/`, ownerKey, { level: 1 }),
    call(h, 'PATCH', `${base}${owner.uuid}/`, aliceKey, { level: 1 }),
  ]);
  expect([a.status, b.status].filter((s) => s === 200).length).toBeLessThanOrEqual(1);
  expect(await h.prisma.organizationMembership.count({ where: { organizationId: org.id, level: 15 } })).toBe(
    1,
  );
  // Organization delete: owners only, and only once it has no projects.
  const soleOwnerKey =
    (await h.prisma.organizationMembership.findFirstOrThrow({ where: { organizationId: org.id, level: 15 } }))
      .userId === owner.id
      ? ownerKey
      : aliceKey;
  const notOwnerKey = soleOwnerKey === ownerKey ? aliceKey : ownerKey;
  expect((await call(h, 'DELETE', `/api/organizations/${org.id}/`, notOwnerKey)).status).toBe(403);
  expect((await call(h, 'DELETE', `/api/organizations/${org.id}/`, soleOwnerKey)).status).toBe(204);
  expect(await h.prisma.organization.count({ where: { id: org.id } })).toBe(0);
  expect(await h.prisma.user.count({ where: { id: owner.id } })).toBe(1);
});

describe('the attacks of issue 12', () => {
  test('the owner of B acting on a user of A: read, e-mail change, 2FA takeover and delete all refused', async () => {
    const ownerB = bobKey;
    await h.prisma.organizationMembership.update({
      where: { organizationId_userId: { organizationId: f.orgB.id, userId: f.bob.id } },
      data: { level: 15 },
    });
    const victim = `/api/users/${f.alice.uuid}/`;
    expect((await call(h, 'GET', victim, ownerB)).status).toBe(404);
    expect((await call(h, 'PATCH', victim, ownerB, { email: 'taken@b.test' })).status).toBe(404);
    expect((await call(h, 'GET', `${victim}start_2fa_setup/`, ownerB)).status).toBe(404);
    expect((await call(h, 'POST', `${victim}validate_2fa/`, ownerB, { token: '123456' })).status).toBe(404);
    expect((await call(h, 'POST', `${victim}two_factor_backup_codes/`, ownerB, {})).status).toBe(404);
    expect((await call(h, 'DELETE', victim, ownerB)).status).toBe(404);
    const list = await call(h, 'GET', '/api/users/?limit=1000', ownerB);
    expect(list.body.results.map((u: { uuid: string }) => u.uuid)).not.toContain(f.alice.uuid);
    expect(JSON.stringify(list.body)).not.toContain(f.teamA.apiToken);
    expect((await call(h, 'GET', `/api/projects/${f.teamA.id}/`, ownerB)).status).toBe(404);
    const alice = await h.prisma.user.findUniqueOrThrow({ where: { id: f.alice.id } });
    expect(alice.email).not.toBe('taken@b.test');
    expect(alice.totpSecret).toBeNull();
  });

  test('an admin of a shared organization cannot touch the account of a user who owns another one', async () => {
    // dave owns org D and is a plain member of A; adminA is admin of A.
    const dave = await h.prisma.user.create({ data: { email: 'dave@d.test', distinctId: 'dave' } });
    const orgD = await h.prisma.organization.create({ data: { name: 'D', slug: 'org-d-attack' } });
    await h.prisma.organizationMembership.createMany({
      data: [
        { organizationId: orgD.id, userId: dave.id, level: 15 },
        { organizationId: f.orgA.id, userId: dave.id, level: 1 },
      ],
    });
    const path = `/api/users/${dave.uuid}/`;
    expect((await call(h, 'GET', path, adminKey)).status).toBe(200);
    expect((await call(h, 'PATCH', path, adminKey, { email: 'mine@a.test' })).status).toBe(403);
    const setup = await call(h, 'GET', `${path}start_2fa_setup/`, adminKey);
    expect(setup.status).toBe(403);
    expect(setup.body.secret).toBeUndefined();
    expect((await call(h, 'DELETE', path, adminKey)).status).toBe(403);
    // What the admin can do: remove dave from A, which leaves dave's account and org D alone.
    expect(
      (await call(h, 'DELETE', `/api/organizations/${f.orgA.id}/members/${dave.uuid}/`, adminKey)).status,
    ).toBe(204);
    expect(await h.prisma.user.count({ where: { id: dave.id } })).toBe(1);
    expect(await h.prisma.organizationMembership.count({ where: { organizationId: orgD.id } })).toBe(1);
  });

  test('2FA a user set up themself still works (the takeover path is closed, not the feature)', async () => {
    const setup = await call(h, 'GET', '/api/users/@me/start_2fa_setup/', bobKey);
    const token = new TOTP({ secret: Secret.fromBase32(setup.body.secret) }).generate();
    expect((await call(h, 'POST', '/api/users/@me/validate_2fa/', bobKey, { token })).status).toBe(200);
  });
});

test('the OpenAPI document lists the organization, member and project endpoints with their scopes', async () => {
  const doc = (await call(h, 'GET', '/api/schema/')).body;
  const expected: Array<[string, string, string]> = [
    ['/api/organizations/', 'get', 'organization:read'],
    ['/api/organizations/', 'post', 'organization:write'],
    ['/api/organizations/{id}/', 'delete', 'organization:write'],
    ['/api/organizations/{id}/members/', 'post', 'organization_member:write'],
    ['/api/organizations/{id}/members/{user_uuid}/', 'patch', 'organization_member:write'],
    ['/api/projects/', 'post', 'project:write'],
    ['/api/projects/{project_id}/', 'delete', 'project:write'],
    ['/api/projects/{project_id}/reset_token/', 'post', 'project:write'],
  ];
  // The generated document states a scope in OpenAPI's own `security` (it had `x-required-scope`).
  for (const [path, method, scope] of expected)
    expect([path, method, doc.paths[path]?.[method]?.security]).toEqual([
      path,
      method,
      [{ PersonalApiKey: [scope] }],
    ]);
  const memberCreate =
    doc.paths['/api/organizations/{id}/members/'].post.requestBody.content['application/json'];
  expect(memberCreate.schema.properties.level.enum).toEqual([1, 8, 15]);
});
