// Users: pagination envelope, visibility, PATCH rules and validation errors, sub-resources,
// TOTP setup and backup code invalidation.
import { TOTP, Secret } from 'otpauth';
import { deriveCredentialKeys, hashBackupCode as keyedHash, verifyPassword } from '@sett/keys';
import { call, createKey, seed, startHarness, type Fixture, type Harness } from './helpers';

let h: Harness;
let f: Fixture;
let aliceKey: string;
let adminKey: string;
let staffKey: string;

beforeAll(async () => {
  h = await startHarness();
  f = await seed(h.prisma);
  aliceKey = await createKey(h.prisma, f.alice.id, ['user:write']);
  adminKey = await createKey(h.prisma, f.adminA.id, ['user:write']);
  staffKey = await createKey(h.prisma, f.staff.id, ['*']);
});
afterAll(() => h.stop());

test('list pages carry count and next/previous links across pages, to the last page', async () => {
  // 3 more members of org A: 5 visible to alice.
  for (let i = 0; i < 3; i++) {
    const u = await h.prisma.user.create({ data: { email: `extra${i}@a.test`, distinctId: `extra${i}` } });
    await h.prisma.organizationMembership.create({ data: { organizationId: f.orgA.id, userId: u.id } });
  }
  // Forwarded headers are anyone's to send: without SETT_PUBLIC_URL links are relative.
  const headers = { 'x-forwarded-proto': 'https', 'x-forwarded-host': 'sett.example.com' };
  const p1 = await call(h, 'GET', '/api/users/?limit=2', aliceKey, undefined, headers);
  expect(p1.status).toBe(200);
  expect(p1.body.count).toBe(5);
  expect(p1.body.results).toHaveLength(2);
  expect(p1.body.previous).toBeNull();
  expect(p1.body.next).toBe('/api/users/?limit=2&offset=2');
  const p2 = await call(h, 'GET', '/api/users/?limit=2&offset=2', aliceKey, undefined, headers);
  expect(p2.body.previous).toBe('/api/users/?limit=2');
  expect(p2.body.next).toBe('/api/users/?limit=2&offset=4');
  const p3 = await call(h, 'GET', '/api/users/?limit=2&offset=4', aliceKey, undefined, headers);
  expect(p3.body.results).toHaveLength(1);
  expect(p3.body.next).toBeNull();
  expect(p3.body.previous).toBe('/api/users/?limit=2&offset=2');
  const all = [...p1.body.results, ...p2.body.results, ...p3.body.results].map(
    (u: { uuid: string }) => u.uuid,
  );
  expect(new Set(all).size).toBe(5);
  expect(all).not.toContain(f.bob.uuid);
});

test('the configured public URL wins for page links', async () => {
  const other = await startHarness({ publicUrl: 'https://public.example/' });
  try {
    const g = await seed(other.prisma);
    const key = await createKey(other.prisma, g.alice.id, ['user:read']);
    const r = await call(other, 'GET', '/api/users/?limit=1', key, undefined, {
      'x-forwarded-host': 'ignored',
    });
    expect(r.body.next).toBe('https://public.example/api/users/?limit=1&offset=1');
  } finally {
    await other.stop();
  }
});

test.each([
  ['limit=abc', 'limit'],
  ['limit=0', 'limit'],
  ['offset=-1', 'offset'],
  ['is_staff=maybe', 'is_staff'],
])('invalid query %s is 400', async (qs, attr) => {
  const r = await call(h, 'GET', `/api/users/?${qs}`, aliceKey);
  expect(r.status).toBe(400);
  expect(r.body).toMatchObject({ type: 'validation_error', attr });
});

test('limit above 1000 is clamped and is_staff filters', async () => {
  const r = await call(h, 'GET', '/api/users/?limit=5000&is_staff=true', staffKey);
  expect(r.status).toBe(200);
  expect(r.body.results.every((u: { is_staff: boolean }) => u.is_staff)).toBe(true);
  expect(r.body.count).toBe(1);
  // staff see users of every organization
  const all = await call(h, 'GET', '/api/users/?is_staff=false', staffKey);
  expect(all.body.results.map((u: { uuid: string }) => u.uuid)).toEqual(
    expect.arrayContaining([f.alice.uuid, f.bob.uuid]),
  );
});

test('retrieve by uuid and @me give the full shape without password fields', async () => {
  const me = await call(h, 'GET', '/api/users/@me/', aliceKey);
  const byId = await call(h, 'GET', `/api/users/${f.alice.uuid}/`, aliceKey);
  expect(me.body).toEqual(byId.body);
  expect(me.body).toMatchObject({
    uuid: f.alice.uuid,
    has_password: true,
    is_2fa_enabled: false,
    is_impersonated: false,
    has_social_auth: false,
  });
  expect(me.body.team.id).toBe(f.teamA.id);
  expect(me.body.organization).toMatchObject({
    id: f.orgA.id,
    membership_level: 1,
    member_count: expect.any(String),
  });
  expect(me.body.organization.teams.map((t: { id: number }) => t.id)).toEqual([f.teamA.id, f.teamA2.id]);
  expect(me.body.organizations).toEqual([expect.objectContaining({ id: f.orgA.id, membership_level: 1 })]);
  expect(me.body).not.toHaveProperty('password');
  expect(me.body).not.toHaveProperty('current_password');
  expect((await call(h, 'GET', '/api/users/not-a-uuid/', aliceKey)).status).toBe(404);
});

test('PATCH updates writable fields', async () => {
  const r = await call(h, 'PATCH', '/api/users/@me/', aliceKey, {
    first_name: 'Alice',
    theme_mode: 'dark',
    toolbar_mode: 'toolbar',
    role_at_organization: 'engineering',
    notification_settings: { plugin_disabled: false },
    events_column_config: { active: ['event'] },
    set_current_team: f.teamA2.id,
  });
  expect(r.status).toBe(200);
  expect(r.body).toMatchObject({
    first_name: 'Alice',
    theme_mode: 'dark',
    toolbar_mode: 'toolbar',
    role_at_organization: 'engineering',
    notification_settings: { plugin_disabled: false },
  });
  expect(r.body.team.id).toBe(f.teamA2.id);
});

test.each([
  [{ email: 'not-an-email' }, 'email'],
  [{ theme_mode: 'purple' }, 'theme_mode'],
  [{ first_name: 5 }, 'first_name'],
  [{ set_current_organization: 'not-a-uuid' }, 'set_current_organization'],
  [{ password: 'short' }, 'password'],
])('PATCH %j is 400 naming %s', async (body, attr) => {
  const r = await call(h, 'PATCH', '/api/users/@me/', aliceKey, body);
  expect(r.status).toBe(400);
  expect(r.body).toMatchObject({ type: 'validation_error', attr });
});

test('PATCH ignores a field it does not know, as PostHog does, and changes what it knows', async () => {
  const r = await call(h, 'PATCH', '/api/users/@me/', aliceKey, { unknown_field: 1, first_name: 'Alicia' });
  expect(r.status).toBe(200);
  expect(r.body.first_name).toBe('Alicia');
  expect(r.body).not.toHaveProperty('unknown_field');
});

test('PATCH semantic checks: unique email, membership of organization/team, is_staff by staff only', async () => {
  const dup = await call(h, 'PATCH', '/api/users/@me/', aliceKey, {
    email: (await h.prisma.user.findUniqueOrThrow({ where: { id: f.bob.id } })).email.toUpperCase(),
  });
  expect(dup).toMatchObject({ status: 400, body: { attr: 'email', code: 'unique' } });
  expect(
    (await call(h, 'PATCH', '/api/users/@me/', aliceKey, { set_current_organization: f.orgB.id })).body.attr,
  ).toBe('set_current_organization');
  expect(
    (await call(h, 'PATCH', '/api/users/@me/', aliceKey, { set_current_team: f.teamB.id })).body.attr,
  ).toBe('set_current_team');
  expect((await call(h, 'PATCH', '/api/users/@me/', aliceKey, { is_staff: true })).status).toBe(403);
  const byStaff = await call(h, 'PATCH', `/api/users/${f.bob.uuid}/`, staffKey, { is_staff: true });
  expect(byStaff.status).toBe(200);
  expect(byStaff.body.is_staff).toBe(true);
  await h.prisma.user.update({ where: { id: f.bob.id }, data: { isStaff: false } });
});

test('password change needs the correct current password', async () => {
  const wrong = await call(h, 'PATCH', '/api/users/@me/', aliceKey, {
    password: 'new password 1',
    current_password: 'nope',
  });
  expect(wrong).toMatchObject({ status: 400, body: { attr: 'current_password' } });
  const missing = await call(h, 'PATCH', '/api/users/@me/', aliceKey, { password: 'new password 1' });
  expect(missing).toMatchObject({ status: 400, body: { attr: 'current_password' } });
  const ok = await call(h, 'PATCH', '/api/users/@me/', aliceKey, {
    password: 'new password 1',
    current_password: 'correct horse',
  });
  expect(ok.status).toBe(200);
  const stored = (await h.prisma.user.findUniqueOrThrow({ where: { id: f.alice.id } })).password;
  expect(stored).not.toContain('new password 1');
  expect(await verifyPassword('new password 1', stored)).toBe(true);
});

test('writes to others: only staff; an organization admin gets 403 and changes nothing', async () => {
  const adminUser = await h.prisma.user.findUniqueOrThrow({ where: { id: f.adminA.id } });
  expect(
    (await call(h, 'PATCH', `/api/users/${adminUser.uuid}/`, aliceKey, { first_name: 'x' })).status,
  ).toBe(403);
  const byAdmin = await call(h, 'PATCH', `/api/users/${f.alice.uuid}/`, adminKey, {
    last_name: 'Set by admin',
  });
  expect(byAdmin).toMatchObject({ status: 403, body: { code: 'permission_denied' } });
  const byStaff = await call(h, 'PATCH', `/api/users/${f.alice.uuid}/`, staffKey, {
    last_name: 'Set by staff',
  });
  expect(byStaff.status).toBe(200);
  expect(byStaff.body.last_name).toBe('Set by staff');
  // visible to alice (shared organization), but no write
  expect((await call(h, 'GET', `/api/users/${adminUser.uuid}/`, aliceKey)).status).toBe(200);
  expect((await call(h, 'DELETE', `/api/users/${adminUser.uuid}/`, aliceKey)).status).toBe(403);
  expect((await call(h, 'DELETE', `/api/users/${f.alice.uuid}/`, adminKey)).status).toBe(403);
  expect(await h.prisma.user.count({ where: { id: f.alice.id } })).toBe(1);
});

test('hedgehog config and scene personalisation', async () => {
  expect((await call(h, 'GET', '/api/users/@me/hedgehog_config/', aliceKey)).body).toEqual({});
  await call(h, 'PATCH', '/api/users/@me/hedgehog_config/', aliceKey, { color: 'green' });
  const merged = await call(h, 'PATCH', '/api/users/@me/hedgehog_config/', aliceKey, {
    accessories: ['hat'],
  });
  expect(merged.body).toEqual({ color: 'green', accessories: ['hat'] });
  expect((await call(h, 'PATCH', '/api/users/@me/hedgehog_config/', aliceKey, [1])).status).toBe(400);
  await call(h, 'POST', '/api/users/@me/scene_personalisation/', aliceKey, {
    scene: 'ProjectHomepage',
    dashboard: 1,
  });
  const r = await call(h, 'POST', '/api/users/@me/scene_personalisation/', aliceKey, {
    scene: 'ProjectHomepage',
    dashboard: 7,
  });
  expect(r.body.scene_personalisation).toEqual([{ scene: 'ProjectHomepage', dashboard: 7 }]);
  expect(
    (await call(h, 'POST', '/api/users/@me/scene_personalisation/', aliceKey, { scene: 'x' })).body,
  ).toMatchObject({ type: 'validation_error', attr: 'dashboard' });
});

test('TOTP setup, then backup codes: shown once, stored hashed, new codes invalidate old ones', async () => {
  const early = await call(h, 'POST', '/api/users/@me/two_factor_backup_codes/', aliceKey, {});
  expect(early.status).toBe(400);
  const setup = await call(h, 'GET', '/api/users/@me/start_2fa_setup/', aliceKey);
  expect(setup.status).toBe(200);
  expect(setup.body).toMatchObject({
    success: true,
    secret: expect.any(String),
    otpauth_url: expect.stringMatching(/^otpauth:\/\/totp\//),
  });
  expect((await call(h, 'POST', '/api/users/@me/validate_2fa/', aliceKey, { token: '000000' })).status).toBe(
    400,
  );
  const token = new TOTP({ secret: Secret.fromBase32(setup.body.secret) }).generate();
  expect((await call(h, 'POST', '/api/users/@me/validate_2fa/', aliceKey, { token })).status).toBe(200);
  expect((await call(h, 'GET', '/api/users/@me/', aliceKey)).body.is_2fa_enabled).toBe(true);

  const hashBackupCode = (code: string) => keyedHash(code, deriveCredentialKeys(h.encryptionKey).backupCode);
  const first = await call(h, 'POST', '/api/users/@me/two_factor_backup_codes/', aliceKey, {});
  expect(first.status).toBe(200);
  expect(first.body.backup_codes).toHaveLength(10);
  const stored1 = await h.prisma.twoFactorBackupCode.findMany({ where: { userId: f.alice.id } });
  expect(stored1.map((c) => c.codeHash).sort()).toEqual(first.body.backup_codes.map(hashBackupCode).sort());
  expect(stored1.some((c) => first.body.backup_codes.includes(c.codeHash))).toBe(false);

  const second = await call(h, 'POST', '/api/users/@me/two_factor_backup_codes/', aliceKey, {});
  const stored2 = await h.prisma.twoFactorBackupCode.findMany({ where: { userId: f.alice.id } });
  expect(stored2).toHaveLength(10);
  const hashes2 = new Set(stored2.map((c) => c.codeHash));
  for (const old of first.body.backup_codes) expect(hashes2.has(hashBackupCode(old))).toBe(false);
  for (const code of second.body.backup_codes) expect(hashes2.has(hashBackupCode(code))).toBe(true);
  expect((await call(h, 'GET', '/api/users/@me/start_2fa_setup/', aliceKey)).status).toBe(400);
});

test('DELETE by the user themself removes the account (204), its keys stop working and the cached member count drops at once', async () => {
  // A fresh organization D (its count never read before): an admin and a leaving member.
  const orgD = await h.prisma.organization.create({ data: { name: 'Org D', slug: `org-d-${Date.now()}` } });
  const adminD = await h.prisma.user.create({
    data: { email: 'admin@d.test', distinctId: 'admin-d', currentOrganizationId: orgD.id },
  });
  const u = await h.prisma.user.create({ data: { email: 'leaving@a.test', distinctId: 'leaving' } });
  for (const [userId, level] of [
    [adminD.id, 8],
    [u.id, 1],
  ] as const)
    await h.prisma.organizationMembership.create({ data: { organizationId: orgD.id, userId, level } });
  await h.prisma.organizationMembership.create({ data: { organizationId: f.orgA.id, userId: u.id } });
  const ownKey = await createKey(h.prisma, u.id, ['user:write']);
  const adminDKey = await createKey(h.prisma, adminD.id, ['user:write']);
  expect((await call(h, 'GET', '/api/users/@me/', ownKey)).status).toBe(200);
  // Counted now and cached for org D.
  expect((await call(h, 'GET', '/api/users/@me/', adminDKey)).body.organization.member_count).toBe('2');
  // An admin of D cannot delete the account; the user themself can.
  expect((await call(h, 'DELETE', `/api/users/${u.uuid}/`, adminDKey)).status).toBe(403);
  const r = await call(h, 'DELETE', '/api/users/@me/', ownKey);
  expect(r.status).toBe(204);
  expect(r.body).toBeUndefined();
  expect(await h.prisma.user.count({ where: { id: u.id } })).toBe(0);
  expect((await call(h, 'GET', '/api/users/@me/', ownKey)).status).toBe(401);
  // The delete dropped org D's cached count: no waiting for the TTL.
  expect((await call(h, 'GET', '/api/users/@me/', adminDKey)).body.organization.member_count).toBe('1');
});
