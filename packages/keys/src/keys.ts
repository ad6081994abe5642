// Credentials: project API keys (public, sent by SDKs), personal API keys (secret, stored only
// as a hash), scopes, and password hashing. Shared by management and the CLI.
import { createHash, randomBytes, scrypt as scryptCb, timingSafeEqual } from 'node:crypto';
import { promisify } from 'node:util';

const scrypt = promisify(scryptCb) as (
  password: string,
  salt: Buffer,
  keylen: number,
  options: object,
) => Promise<Buffer>;

export const SCOPES = [
  'user:read',
  'user:write',
  'project:read',
  'early_access_feature:read',
  'early_access_feature:write',
  'feature_flag:read',
  'feature_flag:write',
  'personal_api_key:read',
  'personal_api_key:write',
] as const;
export type Scope = (typeof SCOPES)[number] | '*';

export function isScope(value: string): value is Scope {
  return value === '*' || (SCOPES as readonly string[]).includes(value);
}

/** A key holding `x:write` may also read `x`, as in PostHog; `*` holds everything. */
export function hasScope(granted: readonly string[], required: Scope): boolean {
  if (granted.includes('*') || granted.includes(required)) return true;
  const [object, action] = required.split(':');
  return action === 'read' && granted.includes(`${object}:write`);
}

const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

function randomString(length: number): string {
  // Rejection sampling keeps every character equally likely.
  let out = '';
  while (out.length < length) {
    for (const b of randomBytes(length * 2)) {
      if (b < 248 && out.length < length) out += ALPHABET[b % 62];
    }
  }
  return out;
}

export function generateProjectToken(): string {
  return `phc_${randomString(43)}`;
}

export function generatePersonalApiKey(): string {
  return `phx_${randomString(47)}`;
}

export function generateKeyId(): string {
  return randomString(24);
}

/** Personal keys are long random strings, so a fast unsalted hash is enough to look them up. */
export function hashPersonalApiKey(value: string): string {
  return `sha256$${createHash('sha256').update(value).digest('hex')}`;
}

export function maskKey(value: string): string {
  return `${value.slice(0, 4)}...${value.slice(-4)}`;
}

const SCRYPT = { N: 16384, r: 8, p: 1, maxmem: 64 * 1024 * 1024 };

/** Passwords are low-entropy: slow, salted scrypt. Format: scrypt$N$r$p$salt$hash (base64). */
export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16);
  const hash = await scrypt(password, salt, 32, SCRYPT);
  return `scrypt$${SCRYPT.N}$${SCRYPT.r}$${SCRYPT.p}$${salt.toString('base64')}$${hash.toString('base64')}`;
}

export async function verifyPassword(password: string, stored: string | null | undefined): Promise<boolean> {
  if (!stored) return false;
  const parts = stored.split('$');
  if (parts.length !== 6 || parts[0] !== 'scrypt') return false;
  const [, n, r, p, salt, hash] = parts as [string, string, string, string, string, string];
  const expected = Buffer.from(hash, 'base64');
  const actual = await scrypt(password, Buffer.from(salt, 'base64'), expected.length, {
    N: Number(n),
    r: Number(r),
    p: Number(p),
    maxmem: SCRYPT.maxmem,
  });
  return actual.length === expected.length && timingSafeEqual(actual, expected);
}

/** One-time backup codes for two-factor auth; stored hashed like personal keys. */
export function generateBackupCode(): string {
  const raw = randomString(10).toLowerCase();
  return `${raw.slice(0, 5)}-${raw.slice(5)}`;
}

export function hashBackupCode(code: string): string {
  return `sha256$${createHash('sha256').update(code.trim().toLowerCase()).digest('hex')}`;
}
