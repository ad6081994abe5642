// Project token -> project lookup for the hot paths (capture, decide): an in-process cache
// with a short TTL (negative entries for unknown tokens too) in front of Redis, and Redis
// filled from Postgres on a miss. In the steady state a request costs no network round trip.
import type { Redis } from 'ioredis';
import { decodeProjectRef, encodeProjectRef, redisKeys, type ProjectRef } from './keys';

export interface TokenResolverOptions {
  redis: Redis;
  /** Reads the project of a token from Postgres; null when there is none. */
  loadFromDb: (token: string) => Promise<ProjectRef | null>;
  ttlMs?: number;
  negativeTtlMs?: number;
  /** Redis TTL of a negative entry, so a new project's token works within this time. */
  redisNegativeTtlSeconds?: number;
  maxEntries?: number;
  now?: () => number;
}

export interface TokenResolverStats {
  localHits: number;
  redisHits: number;
  dbLoads: number;
}

export interface TokenResolver {
  resolve(token: string): Promise<ProjectRef | null>;
  invalidate(token: string): void;
  stats(): TokenResolverStats;
}

interface Entry {
  ref: ProjectRef | null;
  expiresAt: number;
}

export function createTokenResolver(opts: TokenResolverOptions): TokenResolver {
  const ttl = opts.ttlMs ?? 30_000;
  const negativeTtl = opts.negativeTtlMs ?? 10_000;
  const maxEntries = opts.maxEntries ?? 100_000;
  const now = opts.now ?? Date.now;
  const local = new Map<string, Entry>();
  // Concurrent misses for one token share one lookup instead of stampeding Redis/Postgres.
  const inflight = new Map<string, Promise<ProjectRef | null>>();
  const stats: TokenResolverStats = { localHits: 0, redisHits: 0, dbLoads: 0 };

  function remember(token: string, ref: ProjectRef | null): void {
    if (local.size >= maxEntries) {
      const oldest = local.keys().next().value;
      if (oldest !== undefined) local.delete(oldest);
    }
    local.set(token, { ref, expiresAt: now() + (ref ? ttl : negativeTtl) });
  }

  async function lookup(token: string): Promise<ProjectRef | null> {
    const key = redisKeys.token(token);
    const cached = decodeProjectRef(await opts.redis.get(key));
    if (cached !== undefined) {
      stats.redisHits++;
      remember(token, cached);
      return cached;
    }
    stats.dbLoads++;
    const ref = await opts.loadFromDb(token);
    if (ref) await opts.redis.set(key, encodeProjectRef(ref));
    else await opts.redis.set(key, encodeProjectRef(null), 'EX', opts.redisNegativeTtlSeconds ?? 30);
    remember(token, ref);
    return ref;
  }

  return {
    async resolve(token) {
      const hit = local.get(token);
      if (hit && hit.expiresAt > now()) {
        stats.localHits++;
        return hit.ref;
      }
      let p = inflight.get(token);
      if (!p) {
        p = lookup(token).finally(() => inflight.delete(token));
        inflight.set(token, p);
      }
      return p;
    },
    invalidate(token) {
      local.delete(token);
    },
    stats: () => ({ ...stats }),
  };
}
