// A project's flags for one request, from the cheapest source that has them: the flag store's
// in-process copy, else one Redis MGET, else Postgres (skipped Redis while it is marked down).
// Decide's evaluation and local evaluation both load flags through it.
import type { Redis } from '@sett/cache';
import type { ProjectFlags } from './flag-definitions';
import type { FlagSource, FlagStore } from './flag-store';

export interface FlagLoaderDeps {
  redis: Redis;
  flagStore: FlagStore;
  redisHealth: { usable(): boolean; failed(err: unknown): void };
}

/** Throws only when Postgres fails too; `race` bounds the Postgres wait. */
export async function loadProjectFlags(
  deps: FlagLoaderDeps,
  teamId: number,
  race: <T>(work: Promise<T>) => Promise<T>,
): Promise<{ project: ProjectFlags; source: FlagSource }> {
  const cached = deps.flagStore.cached(teamId);
  if (cached) return { project: cached, source: 'local' };
  let redisOk = deps.redisHealth.usable();
  if (redisOk) {
    try {
      const project = deps.flagStore.fromRedis(
        teamId,
        await deps.redis.mget(...deps.flagStore.redisKeys(teamId)),
      );
      if (project) return { project, source: 'redis' };
    } catch (err) {
      redisOk = false;
      deps.redisHealth.failed(err);
    }
  }
  return { project: await race(deps.flagStore.fromPostgres(teamId, redisOk)), source: 'postgres' };
}
