// Project token -> project: @sett/cache's resolver (in-process, then Redis, then Postgres),
// with a direct Postgres path for when Redis is down so flag evaluation keeps working.
import type { Pool } from 'pg';
import { createTokenResolver, type ProjectRef, type Redis } from '@sett/cache';
import { TtlCache } from '../persons/ttl-cache';
import type { RedisHealth } from './decide-service';

export interface ProjectResolver {
  resolve(token: string): Promise<ProjectRef | null>;
}

export function createProjectResolver(opts: {
  redis: Redis;
  pool: Pool;
  redisHealth: RedisHealth;
  ttlMs: number;
}): ProjectResolver {
  async function loadFromDb(token: string): Promise<ProjectRef | null> {
    const { rows } = await opts.pool.query<{ id: number; organization_id: string }>(
      'SELECT id, organization_id FROM teams WHERE api_token = $1',
      [token],
    );
    const row = rows[0];
    return row ? { teamId: row.id, organizationId: row.organization_id } : null;
  }
  const resolver = createTokenResolver({ redis: opts.redis, loadFromDb, ttlMs: opts.ttlMs });
  const fallback = new TtlCache<ProjectRef | null>(opts.ttlMs, 10_000);
  async function fromDb(token: string): Promise<ProjectRef | null> {
    const hit = fallback.get(token);
    if (hit !== undefined) return hit;
    const ref = await loadFromDb(token);
    fallback.set(token, ref);
    return ref;
  }
  return {
    async resolve(token) {
      if (!opts.redisHealth.usable()) return fromDb(token);
      try {
        return await resolver.resolve(token);
      } catch (err) {
        opts.redisHealth.failed(err);
        return fromDb(token);
      }
    },
  };
}
