// Project token -> team id: @sett/cache's token resolver (local cache, Redis shared with capture
// and decide, then Postgres). When Redis is unavailable ingestion keeps going on Postgres alone
// rather than stalling the partition; a Postgres failure is rethrown and the batch retried.
import type { Pool } from 'pg';
import { createTokenResolver, type Redis } from '@sett/cache';
import { findProjectByToken } from '@sett/db';
import type { Logger } from '@sett/logger';

export type TeamResolver = { resolve(token: string): Promise<number | null> };

export function createTeamResolver(opts: {
  pool: Pool;
  redis?: Redis;
  logger: Logger;
  ttlMs?: number;
}): TeamResolver {
  let warnedAt = 0;
  const resolver = createTokenResolver({
    redis: opts.redis,
    loadFromDb: (token) => findProjectByToken(opts.pool, token),
    ttlMs: opts.ttlMs ?? 30_000,
    redisFallback: {
      onError: (error) => {
        if (Date.now() - warnedAt < 10_000) return;
        warnedAt = Date.now();
        opts.logger.warn('token lookup through Redis failed; using Postgres', { error: error.message });
      },
    },
  });
  return { resolve: async (token) => (await resolver.resolve(token))?.teamId ?? null };
}
