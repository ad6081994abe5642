// Credentials at rest: passwords re-hashed at the current scrypt parameters, TOTP secrets
// encrypted (and legacy plaintext ones still working, then encrypted), backup codes keyed-hashed
// (legacy unsalted ones still usable once, then re-keyed).
import { TOTP, Secret } from 'otpauth';
import {
  PASSWORD_SCRYPT,
  createPasswordHasher,
  decryptSecret,
  deriveCredentialKeys,
  encryptSecret,
  generateBackupCode,
  hashBackupCode,
  legacyBackupCodeHash,
  verifyPassword,
  type CredentialKeys,
} from '@sett/keys';
import { createUserCredentials, totpAssociatedData } from '../src/users/user-credentials';
import { call, createKey, seed, startHarness, type Fixture, type Harness } from './helpers';

const OLD_PARAMS = { N: 2 ** 14, r: 8, p: 1 };
const NEW_PREFIX = `scrypt$${PASSWORD_SCRYPT.N}$${PASSWORD_SCRYPT.r}$${PASSWORD_SCRYPT.p}$`;

let h: Harness;
let f: Fixture;
let keys: CredentialKeys;

beforeAll(async () => {
  h = await startHarness();
  f = await seed(h.prisma);
  keys = deriveCredentialKeys(h.encryptionKey);
});
afterAll(() => h.stop());

async function userWith(email: string, data: object) {
  return h.prisma.user.create({ data: { email, distinctId: email, ...data } });
}

test('a password hashed with N=2^14 verifies and is stored again with the current parameters', async () => {
  const old = await createPasswordHasher({ params: OLD_PARAMS }).hash('old secret 1');
  const u = await userWith('old-hash@a.test', { password: old });
  const credentials = createUserCredentials(h.prisma, keys);

  expect(await credentials.verifyPassword(u.id, 'wrong password')).toBe(false);
  expect((await h.prisma.user.findUniqueOrThrow({ where: { id: u.id } })).password).toBe(old);

  expect(await credentials.verifyPassword(u.id, 'old secret 1')).toBe(true);
  const stored = (await h.prisma.user.findUniqueOrThrow({ where: { id: u.id } })).password!;
  expect(stored.startsWith(NEW_PREFIX)).toBe(true);
  expect(await verifyPassword('old secret 1', stored)).toBe(true);
  // Already current: verifying again leaves it alone.
  expect(await credentials.verifyPassword(u.id, 'old secret 1')).toBe(true);
  expect((await h.prisma.user.findUniqueOrThrow({ where: { id: u.id } })).password).toBe(stored);
});

test('a password change verifies an old-parameter current_password and stores a current hash', async () => {
  const old = await createPasswordHasher({ params: OLD_PARAMS }).hash('old secret 2');
  const u = await userWith('old-hash-patch@a.test', { password: old });
  const key = await createKey(h.prisma, u.id, ['user:write']);
  const wrong = await call(h, 'PATCH', '/api/users/@me/', key, {
    password: 'new secret 2',
    current_password: 'nope',
  });
  expect(wrong.status).toBe(400);
  const ok = await call(h, 'PATCH', '/api/users/@me/', key, {
    password: 'new secret 2',
    current_password: 'old secret 2',
  });
  expect(ok.status).toBe(200);
  const stored = (await h.prisma.user.findUniqueOrThrow({ where: { id: u.id } })).password!;
  expect(stored.startsWith(NEW_PREFIX)).toBe(true);
  expect(await verifyPassword('new secret 2', stored)).toBe(true);
});

test('TOTP secrets are stored encrypted and bound to the user; validate_2fa decrypts them', async () => {
  const aliceKey = await createKey(h.prisma, f.alice.id, ['user:write']);
  const setup = await call(h, 'GET', '/api/users/@me/start_2fa_setup/', aliceKey);
  expect(setup.status).toBe(200);
  const stored = (await h.prisma.user.findUniqueOrThrow({ where: { id: f.alice.id } })).totpSecret!;
  expect(stored).toMatch(/^v1:/);
  expect(stored).not.toContain(setup.body.secret);
  expect(decryptSecret(stored, keys.totpSecret, totpAssociatedData(f.alice.id))).toBe(setup.body.secret);
  expect(() => decryptSecret(stored, keys.totpSecret, totpAssociatedData(f.bob.id))).toThrow();

  const token = new TOTP({ secret: Secret.fromBase32(setup.body.secret) }).generate();
  expect((await call(h, 'POST', '/api/users/@me/validate_2fa/', aliceKey, { token })).status).toBe(200);
});

test('a legacy plaintext TOTP secret keeps working and is encrypted on next use', async () => {
  const plain = new Secret({ size: 20 }).base32;
  const u = await userWith('legacy-totp@a.test', { totpSecret: plain });
  const key = await createKey(h.prisma, u.id, ['user:write']);
  // A wrong token is still refused, and the secret is encrypted already.
  expect((await call(h, 'POST', '/api/users/@me/validate_2fa/', key, { token: '000000' })).status).toBe(400);
  const stored = (await h.prisma.user.findUniqueOrThrow({ where: { id: u.id } })).totpSecret!;
  expect(stored).toMatch(/^v1:/);
  expect(decryptSecret(stored, keys.totpSecret, totpAssociatedData(u.id))).toBe(plain);
  const token = new TOTP({ secret: Secret.fromBase32(plain) }).generate();
  expect((await call(h, 'POST', '/api/users/@me/validate_2fa/', key, { token })).status).toBe(200);
  expect((await h.prisma.user.findUniqueOrThrow({ where: { id: u.id } })).totpEnabled).toBe(true);
});

test('a TOTP secret encrypted under another key is a 500, never a silent pass', async () => {
  const other = deriveCredentialKeys(Buffer.alloc(32, 1));
  const u = await userWith('other-key@a.test', {});
  await h.prisma.user.update({
    where: { id: u.id },
    data: { totpSecret: encryptSecret('JBSWY3DPEHPK3PXP', other.totpSecret, totpAssociatedData(u.id)) },
  });
  const key = await createKey(h.prisma, u.id, ['user:write']);
  const token = new TOTP({ secret: Secret.fromBase32('JBSWY3DPEHPK3PXP') }).generate();
  expect((await call(h, 'POST', '/api/users/@me/validate_2fa/', key, { token })).status).toBe(500);
});

test('backup codes: keyed hashes, each usable once; legacy unsalted codes usable once, the rest re-keyed', async () => {
  const u = await userWith('codes@a.test', { totpEnabled: true });
  const credentials = createUserCredentials(h.prisma, keys);
  const [a, b, c] = [generateBackupCode(), generateBackupCode(), generateBackupCode()];
  await h.prisma.twoFactorBackupCode.createMany({
    data: [
      { userId: u.id, codeHash: hashBackupCode(a, keys.backupCode) },
      { userId: u.id, codeHash: legacyBackupCodeHash(b) },
      { userId: u.id, codeHash: legacyBackupCodeHash(c) },
    ],
  });
  expect(await credentials.useBackupCode(u.id, 'wrong-code')).toBe(false);
  expect(await credentials.useBackupCode(f.bob.id, a)).toBe(false); // another user's code
  expect(await credentials.useBackupCode(u.id, a.toUpperCase())).toBe(true);
  expect(await credentials.useBackupCode(u.id, a)).toBe(false); // one use only

  // A legacy code still works once; afterwards no legacy hash is left for this user.
  expect(await credentials.useBackupCode(u.id, b)).toBe(true);
  expect(await credentials.useBackupCode(u.id, b)).toBe(false);
  const rows = await h.prisma.twoFactorBackupCode.findMany({ where: { userId: u.id } });
  expect(rows.every((r) => r.codeHash.startsWith('hmac-sha256$'))).toBe(true);
  // The re-keyed legacy code c still works (its hash was upgraded without knowing it).
  expect(rows.some((r) => r.codeHash === hashBackupCode(c, keys.backupCode) && r.usedAt === null)).toBe(true);
  expect(await credentials.useBackupCode(u.id, c)).toBe(true);
});

test('concurrent uses of one backup code: exactly one succeeds', async () => {
  const u = await userWith('codes-race@a.test', { totpEnabled: true });
  const credentials = createUserCredentials(h.prisma, keys);
  const code = generateBackupCode();
  await h.prisma.twoFactorBackupCode.create({
    data: { userId: u.id, codeHash: hashBackupCode(code, keys.backupCode) },
  });
  const results = await Promise.all(Array.from({ length: 5 }, () => credentials.useBackupCode(u.id, code)));
  expect(results.filter(Boolean)).toHaveLength(1);
});

test('the start-up pass encrypts plaintext TOTP secrets and re-keys legacy backup codes', async () => {
  const plain = new Secret({ size: 20 }).base32;
  const u = await userWith('sweep@a.test', { totpSecret: plain, totpEnabled: true });
  const bad = await userWith('sweep-bad@a.test', { totpSecret: 'not a secret!' });
  const code = generateBackupCode();
  await h.prisma.twoFactorBackupCode.create({ data: { userId: u.id, codeHash: legacyBackupCodeHash(code) } });
  const credentials = createUserCredentials(h.prisma, keys);

  const first = await credentials.protectLegacyCredentials();
  expect(first.totpSecrets).toBeGreaterThanOrEqual(1);
  expect(first.backupCodes).toBeGreaterThanOrEqual(1);
  expect(first.unreadable).toBe(1);
  const row = await h.prisma.user.findUniqueOrThrow({ where: { id: u.id } });
  expect(decryptSecret(row.totpSecret!, keys.totpSecret, totpAssociatedData(u.id))).toBe(plain);
  const codes = await h.prisma.twoFactorBackupCode.findMany({ where: { userId: u.id } });
  expect(codes.map((r) => r.codeHash)).toEqual([hashBackupCode(code, keys.backupCode)]);
  expect((await h.prisma.user.findUniqueOrThrow({ where: { id: bad.id } })).totpSecret).toBe('not a secret!');

  // Idempotent.
  expect(await credentials.protectLegacyCredentials()).toEqual({
    totpSecrets: 0,
    backupCodes: 0,
    unreadable: 1,
  });
});
