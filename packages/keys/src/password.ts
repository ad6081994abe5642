// Password hashing: salted scrypt at OWASP's Password Storage Cheat Sheet parameters
// (N=2^17, r=8, p=1). Stored as scrypt$N$r$p$salt$hash (base64), so hashes made with older,
// weaker parameters still verify and report that they should be re-hashed.
//
// Cost: one hash holds 128 * N * r = 128 MiB for ~0.5 s on one libuv thread. Hashing is bounded
// to PASSWORD_HASH_CONCURRENCY at a time (process-wide) with at most PASSWORD_HASH_MAX_QUEUED
// waiting; beyond that a request fails at once with PasswordHashingBusyError (management: 503),
// so a flood of password attempts costs at most ~256 MiB and never starves the 4-thread pool.
import { randomBytes, scrypt as scryptCb, timingSafeEqual } from 'node:crypto';

export interface ScryptParams {
  N: number;
  r: number;
  p: number;
}

/** OWASP Password Storage Cheat Sheet minimum for scrypt. */
export const PASSWORD_SCRYPT: Readonly<ScryptParams> = Object.freeze({ N: 2 ** 17, r: 8, p: 1 });
export const PASSWORD_HASH_CONCURRENCY = 2;
export const PASSWORD_HASH_MAX_QUEUED = 32;

const SALT_BYTES = 16;
const HASH_BYTES = 32;
// Stored hashes are data: refuse parameters that would let a bad row allocate gigabytes.
const MAX_N = 2 ** 20;
const MAX_R = 32;
const MAX_P = 16;

export class PasswordHashingBusyError extends Error {
  constructor() {
    super('Too many password hashes in progress.');
    this.name = 'PasswordHashingBusyError';
  }
}

export type ScryptFn = (
  password: string,
  salt: Buffer,
  keylen: number,
  params: ScryptParams,
) => Promise<Buffer>;

export interface PasswordCheck {
  valid: boolean;
  /** The hash verified but was made with weaker parameters than `params`: store a new one. */
  needsRehash: boolean;
}

export interface PasswordHasher {
  hash(password: string): Promise<string>;
  check(password: string, stored: string | null | undefined): Promise<PasswordCheck>;
}

const nodeScrypt: ScryptFn = (password, salt, keylen, { N, r, p }) =>
  new Promise((resolve, reject) => {
    // maxmem must exceed 128 * N * r (Node refuses otherwise); the margin covers the small B/XY buffers.
    const maxmem = 128 * N * r + 4 * 1024 * 1024;
    scryptCb(password, salt, keylen, { N, r, p, maxmem }, (err, key) => (err ? reject(err) : resolve(key)));
  });

/** A counting semaphore with a bounded wait queue. */
function createLimiter(concurrency: number, maxQueued: number) {
  let active = 0;
  const waiting: (() => void)[] = [];
  return async function run<T>(task: () => Promise<T>): Promise<T> {
    if (active >= concurrency) {
      if (waiting.length >= maxQueued) throw new PasswordHashingBusyError();
      await new Promise<void>((resolve) => waiting.push(resolve));
    } else {
      active++;
    }
    try {
      return await task();
    } finally {
      // Hand the slot straight to the next waiter (active stays the same), else free it.
      const next = waiting.shift();
      if (next) next();
      else active--;
    }
  };
}

function parse(stored: string): { params: ScryptParams; salt: Buffer; hash: Buffer } | undefined {
  const parts = stored.split('$');
  if (parts.length !== 6 || parts[0] !== 'scrypt') return undefined;
  const [, n, r, p, salt, hash] = parts as [string, string, string, string, string, string];
  const params = { N: Number(n), r: Number(r), p: Number(p) };
  const { N } = params;
  if (!Number.isInteger(N) || N < 2 || N > MAX_N || (N & (N - 1)) !== 0) return undefined;
  if (!Number.isInteger(params.r) || params.r < 1 || params.r > MAX_R) return undefined;
  if (!Number.isInteger(params.p) || params.p < 1 || params.p > MAX_P) return undefined;
  const hashBytes = Buffer.from(hash, 'base64');
  if (hashBytes.length < 16 || hashBytes.length > 64) return undefined;
  return { params, salt: Buffer.from(salt, 'base64'), hash: hashBytes };
}

export function createPasswordHasher(
  options: {
    params?: ScryptParams;
    concurrency?: number;
    maxQueued?: number;
    scrypt?: ScryptFn;
  } = {},
): PasswordHasher {
  const params = options.params ?? PASSWORD_SCRYPT;
  const scrypt = options.scrypt ?? nodeScrypt;
  const limit = createLimiter(
    options.concurrency ?? PASSWORD_HASH_CONCURRENCY,
    options.maxQueued ?? PASSWORD_HASH_MAX_QUEUED,
  );
  return {
    async hash(password) {
      const salt = randomBytes(SALT_BYTES);
      const hash = await limit(() => scrypt(password, salt, HASH_BYTES, params));
      return `scrypt$${params.N}$${params.r}$${params.p}$${salt.toString('base64')}$${hash.toString('base64')}`;
    },
    async check(password, stored) {
      const parsed = stored ? parse(stored) : undefined;
      if (!parsed) return { valid: false, needsRehash: false };
      const actual = await limit(() => scrypt(password, parsed.salt, parsed.hash.length, parsed.params));
      const valid = actual.length === parsed.hash.length && timingSafeEqual(actual, parsed.hash);
      const weaker =
        parsed.params.N < params.N ||
        parsed.params.r < params.r ||
        parsed.params.p < params.p ||
        parsed.salt.length < SALT_BYTES ||
        parsed.hash.length < HASH_BYTES;
      return { valid, needsRehash: valid && weaker };
    },
  };
}

// One process-wide hasher: the bound only works if every caller shares it.
const shared = createPasswordHasher();

/** Passwords are low-entropy: slow, salted scrypt. Format: scrypt$N$r$p$salt$hash (base64). */
export function hashPassword(password: string): Promise<string> {
  return shared.hash(password);
}

/** Verifies and says whether the stored hash should be replaced by hashPassword(password). */
export function checkPassword(password: string, stored: string | null | undefined): Promise<PasswordCheck> {
  return shared.check(password, stored);
}

export async function verifyPassword(password: string, stored: string | null | undefined): Promise<boolean> {
  return (await shared.check(password, stored)).valid;
}
