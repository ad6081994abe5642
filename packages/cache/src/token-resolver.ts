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
  invalidate(token: string): void;
  stats(): TokenResolverStats;
  /** Resolves once the token-changed subscription is active (at once without a subscriber). */
  subscribed: Promise<void>;
  /** Stops listening on the subscriber (the connection itself belongs to the caller). */
  close(): void;
}

const REDIS_POSITIVE_TTL_SECONDS = 3600;

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
  // Bumped by every invalidation: a lookup that started before one does not store its answer,
  // which may be the revoked project read just before the revocation.
  let generation = 0;

  function remember(token: string, ref: ProjectRef | null, startedAt: number): void {
    if (startedAt !== generation) return;
    if (local.size >= maxEntries) {
      const oldest = local.keys().next().value;
      if (oldest !== undefined) local.delete(oldest);
    }
    local.set(token, { ref, expiresAt: now() + (ref ? ttl : negativeTtl) });
  }

  async function fromDb(token: string, startedAt: number): Promise<ProjectRef | null> {
    stats.dbLoads++;
    const ref = await opts.loadFromDb(token);
    remember(token, ref, startedAt);
    return ref;
  }

  async function lookup(token: string): Promise<ProjectRef | null> {
    const startedAt = generation;
    const { redis, redisFallback: fallback } = opts;
    if (!redis || (fallback?.usable && !fallback.usable())) return fromDb(token, startedAt);
    const key = redisKeys.token(token);
    let raw: string | null;
    try {
      raw = await redis.get(key);
    } catch (err) {
      if (!fallback) throw err;
      fallback.onError?.(err as Error);
      return fromDb(token, startedAt);
    }
    const cached = decodeProjectRef(raw);
    if (cached !== undefined) {
      stats.redisHits++;
      remember(token, cached, startedAt);
      return cached;
    }
    const ref = await fromDb(token, startedAt);
    try {
      // A positive entry read back from Postgres lives an hour: if a revocation committed
      // between the read and this write, the revoked token cannot stay in Redis for good.
      if (ref) {
        if (startedAt === generation)
          await redis.set(key, encodeProjectRef(ref), 'EX', REDIS_POSITIVE_TTL_SECONDS);
      } else await redis.set(key, encodeProjectRef(null), 'EX', opts.redisNegativeTtlSeconds ?? 30);
    } catch (err) {
      // The answer is known; only the shared cache missed out.
      if (!fallback) throw err;
      fallback.onError?.(err as Error);
    }
    return ref;
  }

  function forget(token: string): void {
    generation++;
    local.delete(token);
  }

  const subscriber = opts.subscriber;
  const channel = redisKeys.tokenChangedChannel();
  const onMessage = (ch: string, token: string) => {
    if (ch === channel) forget(token);
  };
  // Messages published while the connection was down are lost: start over after a reconnect.
  const onReady = () => {
    generation++;
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
    invalidate: forget,
    stats: () => ({ ...stats }),
  };
}
