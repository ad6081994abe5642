// Project token -> project lookup for capture, decide and ingestion: an in-process cache with a
// short TTL (negative entries for unknown tokens too) in front of Redis, and Redis filled from
// Postgres on a miss. In the steady state a request costs no network round trip. When Redis
// fails, a resolver with `redisFallback` answers from Postgres (still through the local cache);
// one without it rethrows, and the caller decides (capture answers 503).
import type { Redis } from 'ioredis';
import { decodeProjectRef, encodeProjectRef, redisKeys, type ProjectRef } from './keys';

export interface TokenResolverOptions {
  /** Without Redis the resolver is the local cache in front of Postgres. */
  redis?: Redis;
  /** Reads the project of a token from Postgres; null when there is none. */
  loadFromDb: (token: string) => Promise<ProjectRef | null>;
  ttlMs?: number;
  negativeTtlMs?: number;
  /** Redis TTL of a negative entry, so a new project's token works within this time. */
  redisNegativeTtlSeconds?: number;
  maxEntries?: number;
  now?: () => number;
  /** Answer from Postgres while Redis is failing, instead of rethrowing the Redis error. */
  redisFallback?: {
    /** false skips Redis altogether (a caller's circuit breaker after recent failures). */
    usable?: () => boolean;
    onError?: (err: Error) => void;
  };
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

  async function fromDb(token: string): Promise<ProjectRef | null> {
    stats.dbLoads++;
    const ref = await opts.loadFromDb(token);
    remember(token, ref);
    return ref;
  }

  async function lookup(token: string): Promise<ProjectRef | null> {
    const { redis, redisFallback: fallback } = opts;
    if (!redis || (fallback?.usable && !fallback.usable())) return fromDb(token);
    const key = redisKeys.token(token);
    let raw: string | null;
    try {
      raw = await redis.get(key);
    } catch (err) {
      if (!fallback) throw err;
      fallback.onError?.(err as Error);
      return fromDb(token);
    }
    const cached = decodeProjectRef(raw);
    if (cached !== undefined) {
      stats.redisHits++;
      remember(token, cached);
      return cached;
    }
    const ref = await fromDb(token);
    try {
      if (ref) await redis.set(key, encodeProjectRef(ref));
      else await redis.set(key, encodeProjectRef(null), 'EX', opts.redisNegativeTtlSeconds ?? 30);
    } catch (err) {
      // The answer is known; only the shared cache missed out.
      if (!fallback) throw err;
      fallback.onError?.(err as Error);
    }
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
