// Project token -> project: @sett/cache's resolver (in-process, then Redis, then Postgres),
// answering from Postgres while Redis is down (decide's Redis health skips it for a moment
// after a failure) so flag evaluation keeps working. With the subscriber, tokens management
// revokes (reset_token, deleted project) are dropped at once.
import type { Pool } from 'pg';
import { createTokenResolver, type ProjectRef, type Redis, type TokenResolver } from '@sett/cache';
import { findProjectByToken } from '@sett/db';
import type { RedisHealth } from './decide-service';

export interface ProjectResolver {
  resolve(token: string): Promise<ProjectRef | null>;
  /** The in-process answer, when there is one: the request then neither waits nor starts its
   * Postgres deadline for the lookup. */
  cached?(token: string): ProjectRef | null | undefined;
}

export function createProjectResolver(opts: {
  redis: Redis;
  /** Subscriber connection: tokens management revokes are dropped at once. */
  subscriber?: Redis;
  pool: Pool;
  redisHealth: RedisHealth;
  ttlMs: number;
}): TokenResolver {
  return createTokenResolver({
    redis: opts.redis,
    subscriber: opts.subscriber,
    loadFromDb: (token) => findProjectByToken(opts.pool, token),
    ttlMs: opts.ttlMs,
    redisFallback: {
      usable: () => opts.redisHealth.usable(),
      onError: (err) => opts.redisHealth.failed(err),
    },
  });
}
