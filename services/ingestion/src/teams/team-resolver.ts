// Project token -> team id. Redis (shared with capture and decide, through @sett/cache's token
// resolver) in front of Postgres; when Redis is unavailable ingestion keeps going on Postgres
// alone (with a short local cache) rather than stalling the partition.
import type { Pool } from 'pg';
import { createTokenResolver, type ProjectRef, type Redis } from '@sett/cache';
import type { Logger } from '@sett/logger';

export type TeamResolver = { resolve(token: string): Promise<number | null> };

export function createTeamResolver(opts: {
  pool: Pool;
  redis?: Redis;
  logger: Logger;
  ttlMs?: number;
}): TeamResolver {
  const ttlMs = opts.ttlMs ?? 30_000;
  const loadFromDb = async (token: string): Promise<ProjectRef | null> => {
    const { rows } = await opts.pool.query<{ id: number; organization_id: string }>(
      'SELECT id, organization_id FROM teams WHERE api_token = $1',
      [token],
    );
    const row = rows[0];
    return row ? { teamId: row.id, organizationId: row.organization_id } : null;
  };
  const local = new Map<string, { teamId: number | null; expiresAt: number }>();
  const fromDb = async (token: string): Promise<number | null> => {
    const hit = local.get(token);
    if (hit && hit.expiresAt > Date.now()) return hit.teamId;
    const ref = await loadFromDb(token);
    if (local.size > 10_000) local.clear();
    local.set(token, { teamId: ref?.teamId ?? null, expiresAt: Date.now() + ttlMs });
    return ref?.teamId ?? null;
  };
  if (!opts.redis) return { resolve: fromDb };

  const resolver = createTokenResolver({ redis: opts.redis, loadFromDb, ttlMs });
  let warnedAt = 0;
  return {
    async resolve(token) {
      try {
        return (await resolver.resolve(token))?.teamId ?? null;
      } catch (error) {
        // A Postgres failure inside the resolver is rethrown by fromDb below and retried by
        // the batch loop; a Redis failure only costs the cache.
        if (Date.now() - warnedAt > 10_000) {
          warnedAt = Date.now();
          opts.logger.warn('token lookup through Redis failed; using Postgres', {
            error: (error as Error).message,
          });
        }
        return fromDb(token);
      }
    },
  };
}
