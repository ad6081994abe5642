// Backup codes for two-factor auth, stored keyed-hashed. The key is CredentialKeys.backupCode
// (HKDF of SETT_ENCRYPTION_KEY), so a leaked table alone cannot even be brute-forced.
import { createHash, createHmac } from 'node:crypto';

// Backup codes are high-entropy one-time codes: a keyed fast hash is enough and lets a code be
// found by equality (one indexed lookup, no per-row slow hash). The new form is an HMAC of the
// legacy SHA-256 digest, so a legacy `sha256$<hex>` row can be re-keyed without the code.
const BACKUP_PREFIX = 'hmac-sha256$';
const LEGACY_BACKUP_PREFIX = 'sha256$';

function normalizeBackupCode(code: string): string {
  return code.trim().toLowerCase();
}

function hmacOfDigest(digest: Buffer, key: Buffer): string {
  return `${BACKUP_PREFIX}${createHmac('sha256', key).update(digest).digest('hex')}`;
}

/** Stored form of a backup code: hmac-sha256$HMAC(key, SHA-256(code)). */
export function hashBackupCode(code: string, key: Buffer): string {
  return hmacOfDigest(createHash('sha256').update(normalizeBackupCode(code)).digest(), key);
}

/** The unsalted form written before hashBackupCode took a key; only looked up, never written. */
export function legacyBackupCodeHash(code: string): string {
  return `${LEGACY_BACKUP_PREFIX}${createHash('sha256').update(normalizeBackupCode(code)).digest('hex')}`;
}

/** Both stored forms a code may have: query `code_hash IN (...)`. */
export function backupCodeLookupHashes(code: string, key: Buffer): [current: string, legacy: string] {
  return [hashBackupCode(code, key), legacyBackupCodeHash(code)];
}

/** The keyed form of a legacy stored hash, or undefined when `stored` is not legacy. */
export function upgradeLegacyBackupCodeHash(stored: string, key: Buffer): string | undefined {
  if (!stored.startsWith(LEGACY_BACKUP_PREFIX)) return undefined;
  const hex = stored.slice(LEGACY_BACKUP_PREFIX.length);
  if (!/^[0-9a-f]{64}$/.test(hex)) return undefined;
  return hmacOfDigest(Buffer.from(hex, 'hex'), key);
}
