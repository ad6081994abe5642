import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  SecretDecryptionError,
  backupCodeLookupHashes,
  decryptSecret,
  deriveCredentialKeys,
  deriveKey,
  encryptSecret,
  hashBackupCode,
  isEncryptedSecret,
  legacyBackupCodeHash,
  loadOrCreateKeyFile,
  openTotpSecret,
  upgradeLegacyBackupCodeHash,
} from '../src';

const master = randomBytes(32);
const key = deriveCredentialKeys(master).totpSecret;

describe('encrypted secrets', () => {
  it('round-trips, with a fresh IV each time, in the v1 format', () => {
    const a = encryptSecret('JBSWY3DPEHPK3PXP', key, 'user:1');
    const b = encryptSecret('JBSWY3DPEHPK3PXP', key, 'user:1');
    expect(a).toMatch(/^v1:[A-Za-z0-9+/=]{16}:[A-Za-z0-9+/=]{24}:[A-Za-z0-9+/=]+$/);
    expect(a).not.toBe(b);
    expect(a).not.toContain('JBSWY3DP');
    expect(isEncryptedSecret(a)).toBe(true);
    expect(decryptSecret(a, key, 'user:1')).toBe('JBSWY3DPEHPK3PXP');
    expect(decryptSecret(b, key, 'user:1')).toBe('JBSWY3DPEHPK3PXP');
  });

  it('detects tampering: ciphertext, tag, IV, associated data', () => {
    const stored = encryptSecret('JBSWY3DPEHPK3PXP', key, 'user:1');
    const [v, iv, tag, ct] = stored.split(':') as [string, string, string, string];
    const flip = (b64: string) => {
      const buf = Buffer.from(b64, 'base64');
      buf[0]! ^= 1;
      return buf.toString('base64');
    };
    for (const bad of [
      [v, iv, tag, flip(ct)],
      [v, iv, flip(tag), ct],
      [v, flip(iv), tag, ct],
    ]) {
      expect(() => decryptSecret(bad.join(':'), key, 'user:1')).toThrow(SecretDecryptionError);
    }
    // Copied onto another user's row: refused.
    expect(() => decryptSecret(stored, key, 'user:2')).toThrow(SecretDecryptionError);
    expect(() => decryptSecret('v1:AAAA:BBBB', key)).toThrow(SecretDecryptionError);
    expect(() => decryptSecret('v2:a:b:c', key)).toThrow(SecretDecryptionError);
  });

  it('refuses a wrong key', () => {
    const stored = encryptSecret('JBSWY3DPEHPK3PXP', key);
    expect(() => decryptSecret(stored, deriveCredentialKeys(randomBytes(32)).totpSecret)).toThrow(
      /wrong key or modified value/,
    );
    // Another purpose's key from the same master is another key.
    expect(() => decryptSecret(stored, deriveKey(master, 'something else'))).toThrow(SecretDecryptionError);
  });

  it('derives distinct per-purpose keys deterministically', () => {
    const k1 = deriveCredentialKeys(master);
    const k2 = deriveCredentialKeys(Buffer.from(master));
    expect(k1.totpSecret.equals(k2.totpSecret)).toBe(true);
    expect(k1.totpSecret.equals(k1.backupCode)).toBe(false);
    expect(k1.totpSecret.equals(master)).toBe(false);
    expect(() => deriveKey(randomBytes(16), 'x')).toThrow();
  });

  it('recognises legacy plaintext base32 TOTP secrets by format', () => {
    expect(openTotpSecret('JBSWY3DPEHPK3PXP', key, 'user:1')).toEqual({
      base32: 'JBSWY3DPEHPK3PXP',
      legacy: true,
    });
    const stored = encryptSecret('JBSWY3DPEHPK3PXP', key, 'user:1');
    expect(openTotpSecret(stored, key, 'user:1')).toEqual({ base32: 'JBSWY3DPEHPK3PXP', legacy: false });
    expect(isEncryptedSecret('JBSWY3DPEHPK3PXP')).toBe(false);
    expect(() => openTotpSecret('not base32!', key)).toThrow(SecretDecryptionError);
  });
});

describe('backup code hashes', () => {
  const k = deriveCredentialKeys(master).backupCode;

  it('are keyed: same code, same key → same hash; another key → another hash; normalised', () => {
    const h = hashBackupCode('abcde-12345', k);
    expect(h).toMatch(/^hmac-sha256\$[0-9a-f]{64}$/);
    expect(hashBackupCode(' ABCDE-12345 ', k)).toBe(h);
    expect(hashBackupCode('abcde-12345', deriveCredentialKeys(randomBytes(32)).backupCode)).not.toBe(h);
    expect(backupCodeLookupHashes('abcde-12345', k)).toEqual([h, legacyBackupCodeHash('abcde-12345')]);
  });

  it('upgrade a legacy unsalted hash to the keyed hash of the same code, without the code', () => {
    const legacy = legacyBackupCodeHash('abcde-12345');
    expect(legacy).toMatch(/^sha256\$[0-9a-f]{64}$/);
    expect(upgradeLegacyBackupCodeHash(legacy, k)).toBe(hashBackupCode('abcde-12345', k));
    expect(upgradeLegacyBackupCodeHash(hashBackupCode('abcde-12345', k), k)).toBeUndefined();
    expect(upgradeLegacyBackupCodeHash('sha256$zz', k)).toBeUndefined();
  });
});

describe('development key file', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'sett-keys-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('creates a 0600 key file once and reads the same key afterwards', () => {
    const path = join(dir, '.sett', 'encryption-key');
    const first = loadOrCreateKeyFile(path);
    expect(first.created).toBe(true);
    expect(first.key).toHaveLength(32);
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(readFileSync(path, 'utf8').trim()).toBe(first.key.toString('hex'));
    const second = loadOrCreateKeyFile(path);
    expect(second.created).toBe(false);
    expect(second.key.equals(first.key)).toBe(true);
  });

  it('refuses a file that does not hold a key', () => {
    const path = join(dir, 'encryption-key');
    writeFileSync(path, 'hello\n');
    expect(() => loadOrCreateKeyFile(path)).toThrow(/does not hold a key/);
  });
});
