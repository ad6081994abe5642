// Project token -> project lookup for capture, decide and ingestion: an in-process cache with a
// short TTL (negative entries for unknown tokens too) in front of Redis, and Redis filled from
// Postgres on a miss. In the steady state a request costs no network round trip. When Redis
// fails, a resolver with `redisFallback` answers from Postgres (still through the local cache);
// one without it rethrows, and the caller decides (capture answers 503). Given a subscriber
// connection, the resolver listens on the token-changed channel (management publishes a token
// it rotated or whose project it deleted) and forgets that token at once, so the in-process TTL
// only bounds staleness when a message is lost; a reconnect clears everything for that reason.
import type { Redis } from 'ioredis';
import { decodeProjectRef, encodeProjectRef, redisKeys, type ProjectRef } from './keys';
import { createGenerations } from './generations';
import { createLocalCache } from './local-cache';

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
  /**
   * A Redis connection in subscriber mode (it may carry other subscriptions too): the resolver
   * subscribes to the token-changed channel on it and drops revoked tokens at once.
   */
  subscriber?: Redis;
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
  /** The in-process answer (counted as a local hit), or undefined when `resolve` must look. */
  cached(token: string): ProjectRef | null | undefined;
  invalidate(token: string): void;
  stats(): TokenResolverStats;
  /** Resolves once the token-changed subscription is active (at once without a subscriber). */
  subscribed: Promise<void>;
  /** Stops listening on the subscriber (the connection itself belongs to the caller). */
  close(): void;
}

const REDIS_POSITIVE_TTL_SECONDS = 3600;

export function createTokenResolver(opts: TokenResolverOptions): TokenResolver {
  const ttl = opts.ttlMs ?? 30_000;
  const negativeTtl = opts.negativeTtlMs ?? 10_000;
  // Concurrent misses for one token share one lookup, and a lookup overtaken by a revocation
  // does not store its answer, which may be the revoked project read just before (local-cache.ts).
  const local = createLocalCache<string, ProjectRef | null>({
    ttlMs: ttl,
    maxEntries: opts.maxEntries ?? 100_000,
    now: opts.now,
  });
  const ttlFor = (ref: ProjectRef | null) => (ref ? ttl : negativeTtl);
  const stats: TokenResolverStats = { localHits: 0, redisHits: 0, dbLoads: 0 };
  // Bumped by invalidations, for the Redis write-back below (the local cache keeps its own).
  const generations = createGenerations<string>();

  async function fromDb(token: string): Promise<ProjectRef | null> {
    stats.dbLoads++;
    return opts.loadFromDb(token);
  }

  async function lookup(token: string): Promise<ProjectRef | null> {
    const startedAt = generations.stamp(token);
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
      return cached;
    }
    const ref = await fromDb(token);
    try {
      // A positive entry read back from Postgres lives an hour: if a revocation committed
      // between the read and this write, the revoked token cannot stay in Redis for good.
      if (ref) {
        if (generations.current(token, startedAt))
          await redis.set(key, encodeProjectRef(ref), 'EX', REDIS_POSITIVE_TTL_SECONDS);
      } else await redis.set(key, encodeProjectRef(null), 'EX', opts.redisNegativeTtlSeconds ?? 30);
    } catch (err) {
      // The answer is known; only the shared cache missed out.
      if (!fallback) throw err;
      fallback.onError?.(err as Error);
    }
    return ref;
  }

  function cached(token: string): ProjectRef | null | undefined {
    const hit = local.get(token);
    if (hit !== undefined) stats.localHits++;
    return hit;
  }

  function forget(token: string): void {
    generations.bump(token);
    local.delete(token);
  }

  const subscriber = opts.subscriber;
  const channel = redisKeys.tokenChangedChannel();
  const onMessage = (ch: string, token: string) => {
    if (ch === channel) forget(token);
  };
  // Messages published while the connection was down are lost: start over after a reconnect.
  const onReady = () => {
    generations.bumpAll();
    local.clear();
  };
  let subscribed: Promise<void> = Promise.resolve();
  if (subscriber) {
    subscriber.on('message', onMessage);
    subscriber.on('ready', onReady);
    subscribed = subscriber.subscribe(channel).then(
      () => undefined,
      // Still correct without it: entries expire after ttlMs.
      (err: Error) => opts.redisFallback?.onError?.(err),
    );
  }

  return {
    subscribed,
    close() {
      subscriber?.off('message', onMessage);
      subscriber?.off('ready', onReady);
    },
    cached,
    resolve(token) {
      const hit = cached(token);
      if (hit !== undefined) return Promise.resolve(hit);
      return local.getOrLoad(token, () => lookup(token), ttlFor);
    },
    invalidate: forget,
    stats: () => ({ ...stats }),
  };
}
