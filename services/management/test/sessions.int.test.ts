// Signing in from a browser, over real HTTP: the session cookie and its attributes, CSRF on
// writes, the same permissions as the user's keys, logout, the second factor (TOTP once, backup
// codes), the lockouts per account and per address, and a password change ending the user's
// other sessions.
import { Secret, TOTP } from 'otpauth';
import { deriveCredentialKeys, encryptSecret, hashPassword } from '@sett/keys';
import { purgeExpiredSessions } from '../src/sessions/session-store';
import { totpAssociatedData } from '../src/users/user-credentials';
import { call, createKey, seed, startHarness, type Fixture, type Harness, type Reply } from './helpers';

let h: Harness;
let f: Fixture;
let aliceEmail: string;

/** A browser's cookie jar, as far as these tests need one. */
class Browser {
  cookies = new Map<string, string>();
  constructor(private readonly harness: { url: string }) {}
  header() {
    return [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
  }
  async send(method: string, path: string, body?: unknown, headers: Record<string, string> = {}) {
    const r = await call(this.harness, method, path, undefined, body, {
      ...(this.cookies.size ? { cookie: this.header() } : {}),
      ...headers,
    });
    for (const line of r.headers.getSetCookie()) {
      const [pair] = line.split(';');
      const [name, value] = pair!.split('=') as [string, string];
      if (/Max-Age=0/.test(line)) this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
    return r;
  }
  /** A write, with the CSRF token echoed as the console does. */
  write(method: string, path: string, body?: unknown) {
    return this.send(method, path, body, { 'x-csrftoken': this.cookies.get('sett_csrftoken') ?? '' });
  }
  login(email: string, password: string) {
    return this.send('POST', '/api/login/', { email, password });
  }
}

beforeAll(async () => {
  h = await startHarness({ login: { maxFailuresPerAccount: 3, maxFailuresPerIp: 1000, lockoutMs: 60_000 } });
  f = await seed(h.prisma);
  aliceEmail = (await h.prisma.user.findUniqueOrThrow({ where: { id: f.alice.id } })).email;
});
afterAll(() => h.stop());

describe('signing in with a password', () => {
  it('sets an HttpOnly, SameSite=Lax session cookie and a CSRF cookie, stored server-side', async () => {
    const b = new Browser(h);
    const r = await b.login(aliceEmail, 'correct horse');
    expect(r).toMatchObject({ status: 200, body: { success: true } });
    const lines = r.headers.getSetCookie();
    const session = lines.find((l) => l.startsWith('sett_session='))!;
    const csrf = lines.find((l) => l.startsWith('sett_csrftoken='))!;
    expect(session).toMatch(/; HttpOnly/);
    expect(session).toMatch(/; SameSite=Lax/);
    expect(session).not.toMatch(/Secure/); // plain HTTP here
    expect(session).toMatch(/Max-Age=12\d{5}/); // 14 days
    expect(csrf).not.toMatch(/HttpOnly/);
    // The row holds a hash of the token, never the token.
    const token = b.cookies.get('sett_session')!;
    const { rows } = await h.pool.query(`SELECT id FROM user_sessions WHERE user_id = $1`, [f.alice.id]);
    expect(rows.length).toBeGreaterThan(0);
    expect(rows.map((row) => row.id)).not.toContain(token);

    const me = await b.send('GET', '/api/users/@me/');
    expect(me).toMatchObject({ status: 200, body: { uuid: f.alice.uuid } });
  });

  it('refuses a wrong password and an unknown email alike', async () => {
    const wrong = await new Browser(h).login(aliceEmail, 'wrong horse');
    const unknown = await new Browser(h).login('nobody@nowhere.test', 'wrong horse');
    expect(wrong.status).toBe(401);
    expect(unknown.status).toBe(401);
    expect(unknown.body).toEqual(wrong.body);
    expect(wrong.headers.getSetCookie()).toEqual([]);
    const bad = await new Browser(h).send('POST', '/api/login/', { email: aliceEmail });
    expect(bad).toMatchObject({ status: 400, body: { attr: 'password' } });
    // Clear the account's failures for the lockout tests below.
    expect((await new Browser(h).login(aliceEmail, 'correct horse')).status).toBe(200);
  });

  it('needs the CSRF token on writes, and sees what the user role allows, as a key does', async () => {
    const b = new Browser(h);
    await b.login(aliceEmail, 'correct horse');
    const noCsrf = await b.send('PATCH', '/api/users/@me/', { first_name: 'Al' });
    expect(noCsrf).toMatchObject({ status: 403, body: { code: 'csrf_failed' } });
    const wrongCsrf = await b.send(
      'PATCH',
      '/api/users/@me/',
      { first_name: 'Al' },
      { 'x-csrftoken': 'x'.repeat(43) },
    );
    expect(wrongCsrf.status).toBe(403);
    const ok = await b.write('PATCH', '/api/users/@me/', { first_name: 'Al' });
    expect(ok).toMatchObject({ status: 200, body: { first_name: 'Al' } });

    // Alice is a member of A only: B's project is refused to her session exactly as to her key.
    const key = await createKey(h.prisma, f.alice.id, ['*']);
    for (const path of [
      `/api/projects/${f.teamB.id}/feature_flags/`,
      `/api/projects/${f.teamA.id}/feature_flags/`,
    ]) {
      const bySession = await b.send('GET', path);
      const byKey = await call(h, 'GET', path, key);
      expect(bySession.status).toBe(byKey.status);
    }
    // A member may not rename the organization: refused to the session as to the key (the
    // role decides, not scopes).
    const member = await b.write('PATCH', `/api/organizations/${f.orgA.id}/`, { name: 'renamed' });
    const memberKey = await call(h, 'PATCH', `/api/organizations/${f.orgA.id}/`, key, { name: 'renamed' });
    expect(member.status).toBe(403);
    expect(memberKey.status).toBe(403);
  });

  it('lets an Authorization header decide, whatever the cookies', async () => {
    const b = new Browser(h);
    await b.login(aliceEmail, 'correct horse');
    const bobKey = await createKey(h.prisma, f.bob.id, ['user:read']);
    const r = await b.send('GET', '/api/users/@me/', undefined, { authorization: `Bearer ${bobKey}` });
    expect(r.body.uuid).toBe(f.bob.uuid);
  });

  it('logs out: the session is gone server-side and its cookie no longer works', async () => {
    const b = new Browser(h);
    await b.login(aliceEmail, 'correct horse');
    const stolen = b.header();
    expect((await b.send('POST', '/api/logout/')).status).toBe(403); // CSRF, like any write
    const out = await b.write('POST', '/api/logout/');
    expect(out).toMatchObject({ status: 200, body: { success: true } });
    expect(b.cookies.size).toBe(0);
    const replay = await call(h, 'GET', '/api/users/@me/', undefined, undefined, { cookie: stolen });
    expect(replay).toMatchObject({ status: 401 });
    const garbage = await call(h, 'GET', '/api/users/@me/', undefined, undefined, {
      cookie: 'sett_session=abc',
    });
    expect(garbage.status).toBe(401);
  });

  it('expires: an expired session authenticates nothing and is purged', async () => {
    const b = new Browser(h);
    await b.login(aliceEmail, 'correct horse');
    await h.pool.query(
      `UPDATE user_sessions SET expires_at = now() - interval '1 second' WHERE user_id = $1`,
      [f.alice.id],
    );
    expect((await b.send('GET', '/api/users/@me/')).status).toBe(401);
    expect(await purgeExpiredSessions(h.pool)).toBeGreaterThan(0);
    const { rows } = await h.pool.query(
      `SELECT count(*)::int AS n FROM user_sessions WHERE expires_at <= now()`,
    );
    expect(rows[0].n).toBe(0);
  });

  it('sets Secure under HTTPS (a public https URL)', async () => {
    const tls = await startHarness({ publicUrl: 'https://sett.example.test' });
    try {
      const g = await seed(tls.prisma);
      const email = (await tls.prisma.user.findUniqueOrThrow({ where: { id: g.alice.id } })).email;
      const r = await new Browser(tls).login(email, 'correct horse');
      for (const line of r.headers.getSetCookie()) expect(line).toMatch(/; Secure/);
    } finally {
      await tls.stop();
    }
  });
});

describe('the second factor', () => {
  let email: string;
  let totp: TOTP;
  let backup: string[];

  beforeAll(async () => {
    email = `twofa-${Date.now()}@a.test`;
    const secret = new Secret({ size: 20 });
    totp = new TOTP({ issuer: 'Sett', label: email, secret });
    const user = await h.prisma.user.create({
      data: {
        email,
        distinctId: `d-${email}`,
        password: await hashPassword('second factor'),
        totpEnabled: true,
      },
    });
    const keys = deriveCredentialKeys(h.encryptionKey);
    await h.prisma.user.update({
      where: { id: user.id },
      data: { totpSecret: encryptSecret(secret.base32, keys.totpSecret, totpAssociatedData(user.id)) },
    });
    await h.prisma.organizationMembership.create({
      data: { organizationId: f.orgA.id, userId: user.id, level: 1 },
    });
    // Backup codes through the API, as a user makes them.
    const b = new Browser(h);
    await b.login(email, 'second factor');
    await b.send('POST', '/api/login/token/', { token: totp.generate() });
    const codes = await b.write('POST', `/api/users/@me/two_factor_backup_codes/`);
    expect(codes.status).toBe(200);
    backup = codes.body.backup_codes;
  });

  it('answers 401 2fa_required with a pending session that authenticates nothing', async () => {
    const b = new Browser(h);
    const r = await b.login(email, 'second factor');
    expect(r).toMatchObject({ status: 401, body: { code: '2fa_required', detail: '2FA is required.' } });
    expect(b.cookies.has('sett_session')).toBe(true);
    expect((await b.send('GET', '/api/users/@me/')).status).toBe(401);
  });

  it('takes a TOTP code once, and gives a new session token', async () => {
    const b = new Browser(h);
    await b.login(email, 'second factor');
    const pending = b.cookies.get('sett_session');
    const wrong = await b.send('POST', '/api/login/token/', {
      token: '000000' === totp.generate() ? '111111' : '000000',
    });
    expect(wrong).toMatchObject({ status: 400, body: { code: '2fa_invalid', attr: 'token' } });
    // A code is valid for its 30 s step and the ones beside it; the one just used is refused.
    const code = totp.generate({ timestamp: Date.now() + 30_000 });
    const ok = await b.send('POST', '/api/login/token/', { token: code });
    expect(ok).toMatchObject({ status: 200, body: { success: true } });
    expect(b.cookies.get('sett_session')).not.toBe(pending);
    expect((await b.send('GET', '/api/users/@me/')).body.email).toBe(email);

    const again = new Browser(h);
    await again.login(email, 'second factor');
    expect((await again.send('POST', '/api/login/token/', { token: code })).status).toBe(400);
    // Without a pending sign-in there is nothing to complete.
    expect((await new Browser(h).send('POST', '/api/login/token/', { token: code })).status).toBe(401);
  });

  it('takes a backup code instead, once', async () => {
    const b = new Browser(h);
    await b.login(email, 'second factor');
    expect((await b.send('POST', '/api/login/token/', { token: backup[0] })).status).toBe(200);
    const c = new Browser(h);
    await c.login(email, 'second factor');
    expect((await c.send('POST', '/api/login/token/', { token: backup[0] })).status).toBe(400);
  });
});

describe('lockouts', () => {
  it('locks an account after its failures, even against the right password, and says for how long', async () => {
    const email = `locked-${Date.now()}@a.test`;
    await h.prisma.user.create({
      data: { email, distinctId: `d-${email}`, password: await hashPassword('right one') },
    });
    for (let i = 0; i < 3; i++) expect((await new Browser(h).login(email, `guess ${i}`)).status).toBe(401);
    const locked: Reply = await new Browser(h).login(email, 'right one');
    expect(locked).toMatchObject({ status: 429, body: { code: 'too_many_failed_logins' } });
    expect(locked.body.detail).toMatch(/locked for 1 more minute/);
    expect(Number(locked.headers.get('retry-after'))).toBeGreaterThan(0);
    // Another account is not affected.
    expect((await new Browser(h).login(aliceEmail, 'correct horse')).status).toBe(200);
  });

  it('refuses an address that fails across many accounts', async () => {
    const strict = await startHarness({
      login: { maxFailuresPerAccount: 100, maxFailuresPerIp: 4, lockoutMs: 60_000 },
    });
    try {
      const g = await seed(strict.prisma);
      const email = (await strict.prisma.user.findUniqueOrThrow({ where: { id: g.alice.id } })).email;
      for (let i = 0; i < 4; i++)
        expect((await new Browser(strict).login(`someone${i}@x.test`, 'guess')).status).toBe(401);
      const r = await new Browser(strict).login(email, 'correct horse');
      expect(r).toMatchObject({ status: 429, body: { code: 'too_many_failed_logins' } });
      expect(r.body.detail).toMatch(/from this address/);
    } finally {
      await strict.stop();
    }
  });
});

describe('changing the password', () => {
  it('needs the current one, and ends the other sessions', async () => {
    const email = `changer-${Date.now()}@a.test`;
    await h.prisma.user.create({
      data: { email, distinctId: `d-${email}`, password: await hashPassword('old password') },
    });
    const here = new Browser(h);
    const elsewhere = new Browser(h);
    await here.login(email, 'old password');
    await elsewhere.login(email, 'old password');
    const noCurrent = await here.write('PATCH', '/api/users/@me/', { password: 'new password 1' });
    expect(noCurrent).toMatchObject({ status: 400, body: { attr: 'current_password' } });
    const changed = await here.write('PATCH', '/api/users/@me/', {
      current_password: 'old password',
      password: 'new password 1',
    });
    expect(changed.status).toBe(200);
    expect((await here.send('GET', '/api/users/@me/')).status).toBe(200);
    expect((await elsewhere.send('GET', '/api/users/@me/')).status).toBe(401);
    expect((await new Browser(h).login(email, 'old password')).status).toBe(401);
    expect((await new Browser(h).login(email, 'new password 1')).status).toBe(200);
  });
});
