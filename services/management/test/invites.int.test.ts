// Invites over HTTP: admins invite an email up to their own level, members cannot; the link's id
// shows what it is for, is accepted once with a password of the person's choosing, creates the
// account and the membership and signs the person in; an expired, used or made-up id is refused.
import { call, createKey, seed, startHarness, type Fixture, type Harness } from './helpers';

let h: Harness;
let f: Fixture;
let admin: string;
let member: string;

beforeAll(async () => {
  h = await startHarness();
  f = await seed(h.prisma);
  admin = await createKey(h.prisma, f.adminA.id, ['organization_member:write']);
  member = await createKey(h.prisma, f.alice.id, ['organization_member:write']);
});
afterAll(() => h.stop());

const invites = () => `/api/organizations/${f.orgA.id}/invites/`;

it('lets admins invite up to their own level, and nobody else', async () => {
  const r = await call(h, 'POST', invites(), admin, { target_email: 'New.Person@example.com', level: 8 });
  expect(r.status).toBe(201);
  expect(r.body).toMatchObject({ target_email: 'new.person@example.com', level: 8, is_expired: false });
  expect(
    (await call(h, 'POST', invites(), admin, { target_email: 'boss@example.com', level: 15 })).status,
  ).toBe(403);
  expect((await call(h, 'POST', invites(), member, { target_email: 'x@example.com' })).status).toBe(403);
  expect((await call(h, 'GET', invites(), member)).status).toBe(403);
  const bad = await call(h, 'POST', invites(), admin, { target_email: 'not an email' });
  expect(bad).toMatchObject({ status: 400, body: { attr: 'target_email' } });
  const already = await call(h, 'POST', invites(), admin, {
    target_email: (await h.prisma.user.findUniqueOrThrow({ where: { id: f.alice.id } })).email,
  });
  expect(already).toMatchObject({ status: 400, body: { code: 'unique' } });
  // Another invite for the same email replaces the first.
  const again = await call(h, 'POST', invites(), admin, { target_email: 'new.person@example.com' });
  const list = await call(h, 'GET', invites(), admin);
  expect(list.body.map((i: { id: string }) => i.id)).toEqual([again.body.id]);
  expect((await call(h, 'GET', `/api/signup/${r.body.id}/`)).status).toBe(400);
});

it('accepts a link once: the account, its membership and a signed-in session', async () => {
  const invite = await call(h, 'POST', invites(), admin, {
    target_email: 'joiner@example.com',
    first_name: 'Jo',
  });
  const preview = await call(h, 'GET', `/api/signup/${invite.body.id}/`);
  expect(preview.body).toEqual({
    id: invite.body.id,
    target_email: 'joiner@example.com',
    first_name: 'Jo',
    organization_name: 'Org A',
  });
  const short = await call(h, 'POST', `/api/signup/${invite.body.id}/`, undefined, { password: 'short' });
  expect(short).toMatchObject({ status: 400, body: { attr: 'password' } });
  const r = await call(h, 'POST', `/api/signup/${invite.body.id}/`, undefined, {
    password: 'a good password',
  });
  expect(r.status).toBe(201);
  expect(r.body).toMatchObject({ email: 'joiner@example.com', organization_id: f.orgA.id });
  const cookie = r.headers
    .getSetCookie()
    .map((c) => c.split(';')[0])
    .join('; ');
  const me = await call(h, 'GET', '/api/users/@me/', undefined, undefined, { cookie });
  expect(me.body).toMatchObject({ email: 'joiner@example.com', first_name: 'Jo' });
  const membership = await h.prisma.organizationMembership.findFirst({
    where: { organizationId: f.orgA.id, user: { email: 'joiner@example.com' } },
  });
  expect(membership?.level).toBe(1);
  // Once only; then the person signs in with the password they chose.
  expect(
    (await call(h, 'POST', `/api/signup/${invite.body.id}/`, undefined, { password: 'another one!' })).status,
  ).toBe(400);
  const login = await call(h, 'POST', '/api/login/', undefined, {
    email: 'joiner@example.com',
    password: 'a good password',
  });
  expect(login.status).toBe(200);
});

it('refuses made-up, revoked and expired links', async () => {
  expect((await call(h, 'GET', '/api/signup/not-a-uuid/')).status).toBe(400);
  expect((await call(h, 'GET', '/api/signup/00000000-0000-4000-8000-000000000000/')).status).toBe(400);
  const revoked = await call(h, 'POST', invites(), admin, { target_email: 'revoked@example.com' });
  expect((await call(h, 'DELETE', `${invites()}${revoked.body.id}/`, admin)).status).toBe(204);
  expect((await call(h, 'GET', `/api/signup/${revoked.body.id}/`)).status).toBe(400);
  const old = await call(h, 'POST', invites(), admin, { target_email: 'late@example.com' });
  await h.pool.query(`UPDATE organization_invites SET created_at = now() - interval '4 days' WHERE id = $1`, [
    old.body.id,
  ]);
  const expired = await call(h, 'POST', `/api/signup/${old.body.id}/`, undefined, {
    password: 'a good password',
  });
  expect(expired).toMatchObject({ status: 400, body: { code: 'expired' } });
  expect(await h.prisma.user.count({ where: { email: 'late@example.com' } })).toBe(0);
});
