// Failed sign-ins, counted in Redis so every replica sees them: per account (the email, hashed)
// and per client address. An account with LOGIN_MAX_FAILURES_PER_ACCOUNT failures within
// LOGIN_LOCKOUT_MS is locked for LOGIN_LOCKOUT_MS from its last failure, whatever password comes
// next (the right one included); an address with LOGIN_MAX_FAILURES_PER_IP failures is refused
// the same way, across accounts. A success clears the account's count, not the address's.
// Unlike the request rate limit, this guard fails closed: with Redis down, sign-in answers 503
// instead of letting password guesses through unlimited.
import { createHash } from 'node:crypto';
import type { Redis } from '@sett/cache';
import { SettError, ServiceUnavailableError } from '@sett/http';

export interface LoginLimits {
  maxFailuresPerAccount: number;
  maxFailuresPerIp: number;
  lockoutMs: number;
}

export const DEFAULT_LOGIN_LIMITS: LoginLimits = {
  maxFailuresPerAccount: 5,
  maxFailuresPerIp: 20,
  lockoutMs: 15 * 60_000,
};

const accountKey = (email: string) =>
  `login:fail:account:${createHash('sha256').update(email.trim().toLowerCase()).digest('hex')}`;
const ipKey = (ip: string) => `login:fail:ip:${ip}`;

class LockedOutError extends SettError {
  constructor(what: 'account' | 'address', retryAfterSeconds: number) {
    const minutes = Math.max(1, Math.ceil(retryAfterSeconds / 60));
    super(
      429,
      'throttled_error',
      'too_many_failed_logins',
      what === 'account'
        ? `Too many failed sign-ins for this account: it is locked for ${minutes} more minute${minutes === 1 ? '' : 's'}.`
        : `Too many failed sign-ins from this address: try again in ${minutes} minute${minutes === 1 ? '' : 's'}.`,
      null,
      { 'Retry-After': String(retryAfterSeconds) },
    );
  }
}

// INCR the counter, and (re)start its window at every failure: a lock lasts LOCKOUT from the
// last failure. Answers the new count.
const FAIL_SCRIPT = `
local n = redis.call('INCR', KEYS[1])
redis.call('PEXPIRE', KEYS[1], ARGV[1])
return n`;

export function createLoginGuard(redis: Redis, limits: LoginLimits) {
  async function guarded<T>(work: () => Promise<T>): Promise<T> {
    try {
      return await work();
    } catch (error) {
      if (error instanceof SettError) throw error;
      throw new ServiceUnavailableError(
        'Sign-in is unavailable: its failed-attempt store (Redis) does not answer. Retry shortly.',
        5,
      );
    }
  }

  async function refuseIfOver(key: string, max: number, what: 'account' | 'address') {
    const [count, ttl] = await Promise.all([redis.get(key), redis.pttl(key)]);
    if (Number(count ?? 0) >= max) throw new LockedOutError(what, Math.max(1, Math.ceil(ttl / 1000)));
  }

  return {
    /** 429 when the account or the address is locked out, before any password is checked. */
    check: (email: string, ip: string) =>
      guarded(async () => {
        await refuseIfOver(ipKey(ip), limits.maxFailuresPerIp, 'address');
        await refuseIfOver(accountKey(email), limits.maxFailuresPerAccount, 'account');
      }),

    /** Counts a failure (a wrong password or second factor) against both. */
    failed: (email: string, ip: string) =>
      guarded(async () => {
        await Promise.all([
          redis.eval(FAIL_SCRIPT, 1, accountKey(email), String(limits.lockoutMs)),
          redis.eval(FAIL_SCRIPT, 1, ipKey(ip), String(limits.lockoutMs)),
        ]);
      }),

    succeeded: (email: string) => guarded(async () => void (await redis.del(accountKey(email)))),
  };
}

export type LoginGuard = ReturnType<typeof createLoginGuard>;
