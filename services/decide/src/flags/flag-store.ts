// Where decide gets a project's flag definitions, group type mapping and cohorts (flags
// evaluate against them, so they travel together). The store owns the whole chain, `load`:
// an in-process copy (short TTL, dropped at once when the flags-changed channel names the
// project), else one Redis MGET, else Postgres (three queries in parallel), written back to Redis
// so the next instance finds it there. While Redis is marked down (redisHealth), Postgres is the
// source and nothing is written back. Decide's evaluation and local evaluation both load here. A
// list loaded from Redis or Postgres has its new regex patterns compiled before it is handed out,
// one per turn of the event loop.
import type { Pool } from 'pg';
import {
  decodeCohortList,
  decodeFlagList,
  decodeGroupTypes,
  encodeCohortList,
  encodeFlagList,
  redisKeys,
  createGenerations,
  createLocalCache,
  type Redis,
} from '@sett/cache';
import type { Logger } from '@sett/logger';
import { compileRegexesInTurns } from '@sett/flags';
import { prepareProjectFlags, type ProjectFlags } from './flag-definitions';

export type FlagSource = 'local' | 'redis' | 'postgres';

export interface FlagStore {
  /**
   * The project's flags from the cheapest source that has them: warm, no round trip; else one
   * Redis MGET; else Postgres (3 queries in parallel, `race` bounding the wait) and one Redis
   * MULTI writing them back. Throws only when Postgres fails too.
   */
  load(
    teamId: number,
    race: <T>(work: Promise<T>) => Promise<T>,
  ): Promise<{ project: ProjectFlags; source: FlagSource }>;
  /** The in-process copy, if fresh. */
  cached(teamId: number): ProjectFlags | undefined;
  /** Keys to MGET, in this order, on a local miss: flag list, group types, cohort list. */
  redisKeys(teamId: number): [string, string, string];
  /** Builds from the MGET values; undefined when Redis has no (valid) flag list. */
  fromRedis(teamId: number, values: Array<string | null>): ProjectFlags | undefined;
  /** Loads from Postgres; writes back to Redis unless told Redis is down. */
  fromPostgres(teamId: number, writeBack: boolean): Promise<ProjectFlags>;
  invalidate(teamId: number): void;
  clear(): void;
}

export interface FlagStoreOptions {
  redis: Redis;
  /** Skips Redis for a moment after a failed round trip (decide-service.ts); default: always try. */
  redisHealth?: { usable(): boolean; failed(err: unknown): void };
  pool: Pool;
  logger: Logger;
  ttlMs: number;
  /** Redis TTL of lists decide writes back (management's own writes have none). */
  writeBackTtlSeconds?: number;
  now?: () => number;
}

export function createFlagStore(opts: FlagStoreOptions): FlagStore {
  const now = opts.now ?? Date.now;
  const local = createLocalCache<number, ProjectFlags>({ ttlMs: opts.ttlMs, maxEntries: 10_000, now });
  // Bumped by invalidate (one project) and clear (every project): a load that started before
  // either must not be remembered.
  const generations = createGenerations<number>();
  const stamp = (teamId: number) => generations.stamp(teamId);
  const inflight = new Map<number, Promise<ProjectFlags>>();
  // The last list built from Redis per project, with the values it was built from. When the
  // local copy expires and Redis still holds the same bytes, the same definition objects are
  // reused: evaluation's per-definition preparation and the response's per-object JSON
  // fragments stay warm instead of being rebuilt every TTL.
  const lastFromRedis = new Map<
    number,
    { flags: string; groupTypes: string; cohorts: string | null; project: ProjectFlags }
  >();

  function remember(project: ProjectFlags, gen: string): ProjectFlags {
    if (generations.current(project.teamId, gen)) local.set(project.teamId, project);
    return project;
  }

  async function loadFromPostgres(teamId: number, writeBack: boolean): Promise<ProjectFlags> {
    const gen = stamp(teamId);
    const [flagRows, groupRows, cohortRows] = await Promise.all([
      opts.pool.query(
        `SELECT id, team_id, key, name, filters, active, deleted, ensure_experience_continuity, version,
                has_encrypted_payloads
           FROM feature_flags WHERE team_id = $1 AND NOT deleted AND NOT is_remote_configuration ORDER BY id`,
        [teamId],
      ),
      opts.pool.query('SELECT group_type, group_type_index FROM group_type_mappings WHERE team_id = $1', [
        teamId,
      ]),
      opts.pool.query(
        `SELECT id, name, filters, is_static, version FROM cohorts WHERE team_id = $1 AND NOT deleted ORDER BY id`,
        [teamId],
      ),
    ]);
    const groupTypes: Record<number, string> = {};
    for (const row of groupRows.rows as Array<{ group_type: string; group_type_index: number }>) {
      groupTypes[row.group_type_index] = row.group_type;
    }
    const project = prepareProjectFlags(teamId, flagRows.rows, groupTypes, cohortRows.rows);
    if (writeBack) {
      // NX: never overwrite a list that management wrote meanwhile (it is newer than ours).
      const ttl = opts.writeBackTtlSeconds ?? 600;
      const list = encodeFlagList({ teamId, updatedAt: now(), flags: flagRows.rows });
      await opts.redis
        .multi()
        .set(redisKeys.flags(teamId), list, 'EX', ttl, 'NX')
        .set(redisKeys.groupTypes(teamId), JSON.stringify(groupTypes), 'EX', ttl, 'NX')
        .set(
          redisKeys.cohorts(teamId),
          encodeCohortList({ teamId, updatedAt: now(), cohorts: cohortRows.rows }),
          'EX',
          ttl,
          'NX',
        )
        .exec()
        .catch((err: Error) =>
          opts.logger.warn('could not write flags back to redis', { teamId, err: err.message }),
        );
    }
    return remember(project, gen);
  }

  const redisHealth = opts.redisHealth ?? { usable: () => true, failed: () => undefined };

  const store: FlagStore = {
    async load(teamId, race) {
      const cached = store.cached(teamId);
      if (cached) return { project: cached, source: 'local' };
      let redisOk = redisHealth.usable();
      let project: ProjectFlags | undefined;
      if (redisOk) {
        try {
          project = store.fromRedis(teamId, await opts.redis.mget(...store.redisKeys(teamId)));
        } catch (err) {
          redisOk = false;
          redisHealth.failed(err);
        }
      }
      const source = project ? 'redis' : 'postgres';
      project ??= await race(store.fromPostgres(teamId, redisOk));
      // Patterns met for the first time are compiled one per turn, so that a project with many
      // new ones does not hold up every other request (@sett/flags regex-warmup.ts).
      await compileRegexesInTurns(project.regexPatterns);
      return { project, source };
    },
    cached: (teamId) => local.get(teamId),
    redisKeys: (teamId) => [redisKeys.flags(teamId), redisKeys.groupTypes(teamId), redisKeys.cohorts(teamId)],
    fromRedis(teamId, values) {
      const gen = stamp(teamId);
      const last = lastFromRedis.get(teamId);
      const cohortsRaw = values[2] ?? null;
      if (last && last.flags === values[0] && last.groupTypes === values[1] && last.cohorts === cohortsRaw)
        return remember(last.project, gen);
      const list = decodeFlagList<unknown>(values[0] ?? null);
      if (!list) return undefined;
      const groupTypes = decodeGroupTypes(values[1] ?? null);
      // Without its group type mapping the list is treated as a miss: the Postgres load writes
      // the mapping back (an empty one too), so this happens once per project, not per request.
      if (!groupTypes) return undefined;
      const cohortList = decodeCohortList<unknown>(cohortsRaw);
      const project = prepareProjectFlags(teamId, list.flags, groupTypes, cohortList?.cohorts ?? []);
      // A list naming cohorts without the cohort list beside it is a miss: Postgres has them.
      if (!cohortList && project.usesCohorts) return undefined;
      lastFromRedis.set(teamId, { flags: values[0]!, groupTypes: values[1]!, cohorts: cohortsRaw, project });
      return remember(project, gen);
    },
    fromPostgres(teamId, writeBack) {
      // Concurrent misses for one project share one load instead of stampeding Postgres.
      let p = inflight.get(teamId);
      if (!p) {
        p = loadFromPostgres(teamId, writeBack).finally(() => inflight.delete(teamId));
        inflight.set(teamId, p);
      }
      return p;
    },
    invalidate(teamId) {
      local.delete(teamId);
      generations.bump(teamId);
    },
    clear() {
      generations.bumpAll();
      local.clear();
    },
  };
  return store;
}
