// Secrets Sett must read back (TOTP secrets): AES-256-GCM with a random 12-byte IV, stored as
// `v1:<iv b64>:<tag b64>:<ciphertext b64>`. Keys are derived from the one master key
// (SETT_ENCRYPTION_KEY) with HKDF-SHA-256 and a purpose label, so each use has its own key.
// Optional associated data (e.g. the owning user's id) binds a ciphertext to its row.
import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';

const VERSION = 'v1';
const IV_BYTES = 12;
const TAG_BYTES = 16;

export class SecretDecryptionError extends Error {
  constructor(reason: string) {
    super(`Cannot decrypt a stored secret: ${reason}.`);
    this.name = 'SecretDecryptionError';
  }
}

/** A 32-byte key for one purpose, e.g. deriveKey(master, 'sett/totp-secret/v1'). */
export function deriveKey(master: Buffer, purpose: string): Buffer {
  if (master.length !== 32) throw new Error('The master key must be 32 bytes.');
  return Buffer.from(hkdfSync('sha256', master, Buffer.alloc(0), purpose, 32));
}

/** The keys management derives from SETT_ENCRYPTION_KEY. */
export interface CredentialKeys {
  /** AES-256-GCM key of TOTP secrets. */
  totpSecret: Buffer;
  /** HMAC-SHA-256 key of backup code hashes. */
  backupCode: Buffer;
}

export function deriveCredentialKeys(master: Buffer): CredentialKeys {
  return {
    totpSecret: deriveKey(master, 'sett/totp-secret/v1'),
    backupCode: deriveKey(master, 'sett/backup-code/v1'),
  };
}

export function encryptSecret(plaintext: string, key: Buffer, associatedData?: string): string {
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  if (associatedData !== undefined) cipher.setAAD(Buffer.from(associatedData, 'utf8'));
  const ciphertext = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
  const tag = cipher.getAuthTag();
  return [VERSION, iv.toString('base64'), tag.toString('base64'), ciphertext.toString('base64')].join(':');
}

export function isEncryptedSecret(stored: string): boolean {
  return stored.startsWith(`${VERSION}:`);
}

/** Throws SecretDecryptionError when malformed, tampered with, or encrypted with another key. */
export function decryptSecret(stored: string, key: Buffer, associatedData?: string): string {
  const parts = stored.split(':');
  if (parts.length !== 4 || parts[0] !== VERSION) throw new SecretDecryptionError('unknown format');
  const [, ivB64, tagB64, ctB64] = parts as [string, string, string, string];
  const iv = Buffer.from(ivB64, 'base64');
  const tag = Buffer.from(tagB64, 'base64');
  if (iv.length !== IV_BYTES || tag.length !== TAG_BYTES) throw new SecretDecryptionError('malformed');
  const decipher = createDecipheriv('aes-256-gcm', key, iv, { authTagLength: TAG_BYTES });
  if (associatedData !== undefined) decipher.setAAD(Buffer.from(associatedData, 'utf8'));
  decipher.setAuthTag(tag);
  try {
    return Buffer.concat([decipher.update(Buffer.from(ctB64, 'base64')), decipher.final()]).toString('utf8');
  } catch {
    // GCM cannot tell a wrong key from a modified value: both fail authentication.
    throw new SecretDecryptionError('wrong key or modified value');
  }
}

const BASE32 = /^[A-Z2-7]+=*$/;

/**
 * A stored TOTP secret: `v1:...` is decrypted; a bare base32 string is a legacy plaintext
 * secret (written before encryption) and is returned with `legacy: true` so the caller can
 * store it encrypted. Anything else throws SecretDecryptionError.
 */
export function openTotpSecret(
  stored: string,
  key: Buffer,
  associatedData?: string,
): { base32: string; legacy: boolean } {
  if (isEncryptedSecret(stored)) return { base32: decryptSecret(stored, key, associatedData), legacy: false };
  if (BASE32.test(stored)) return { base32: stored, legacy: true };
  throw new SecretDecryptionError('neither an encrypted value nor a base32 secret');
}
