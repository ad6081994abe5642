// Writes done by the owners of the data: management (tokens, flag lists) and ingestion
// (group type mappings). Flag list writes also publish on a channel so decide drops its
// in-process copy at once instead of waiting for its TTL. Remote config documents depend on
// the flags (hasFeatureFlags) and on project settings: both kinds of write drop them.
import type { Redis } from 'ioredis';
import {
  encodeCohortList,
  encodeFlagList,
  encodeProjectRef,
  redisKeys,
  type CohortList,
  type FlagList,
  type ProjectRef,
} from './keys';

export async function writeProjectToken(redis: Redis, token: string, ref: ProjectRef): Promise<void> {
  await redis.set(redisKeys.token(token), encodeProjectRef(ref));
}

export async function deleteProjectToken(redis: Redis, token: string): Promise<void> {
  await redis.del(redisKeys.token(token));
}

/**
 * A token that no longer names a project (rotated or deleted project): its Redis entry is
 * dropped and every token resolver subscribed to the channel forgets its in-process copy.
 */
export async function revokeProjectToken(redis: Redis, token: string): Promise<void> {
  await redis
    .multi()
    .del(redisKeys.token(token))
    .publish(redisKeys.tokenChangedChannel(), token)
    .exec()
    .then(throwFirstError);
}

export async function writeFlagList<F>(redis: Redis, list: FlagList<F>): Promise<void> {
  await redis
    .multi()
    .set(redisKeys.flags(list.teamId), encodeFlagList(list))
    .del(redisKeys.remoteConfig(list.teamId))
    .publish(redisKeys.flagsChangedChannel(), String(list.teamId))
    .publish(redisKeys.remoteConfigChangedChannel(), String(list.teamId))
    .exec()
    .then(throwFirstError);
}

/**
 * A project's cohort definitions. Flags evaluate against them, so decide drops its cached flags
 * of the project on the same channel as for a flag list write.
 */
export async function writeCohortList<C>(redis: Redis, list: CohortList<C>): Promise<void> {
  await redis
    .multi()
    .set(redisKeys.cohorts(list.teamId), encodeCohortList(list))
    .publish(redisKeys.flagsChangedChannel(), String(list.teamId))
    .exec()
    .then(throwFirstError);
}

/** Drops the project's remote config document everywhere; decide rebuilds it on the next request. */
export async function invalidateRemoteConfig(redis: Redis, teamId: number): Promise<void> {
  await redis
    .multi()
    .del(redisKeys.remoteConfig(teamId))
    .publish(redisKeys.remoteConfigChangedChannel(), String(teamId))
    .exec()
    .then(throwFirstError);
}

// MULTI/EXEC resolves even when a queued command failed; a half-applied write must not pass.
function throwFirstError(results: Array<[Error | null, unknown]> | null): void {
  for (const [err] of results ?? []) if (err) throw err;
}

export async function writeGroupTypes(
  redis: Redis,
  teamId: number,
  mapping: Record<number, string>,
): Promise<void> {
  await redis.set(redisKeys.groupTypes(teamId), JSON.stringify(mapping));
  await redis.publish(redisKeys.flagsChangedChannel(), String(teamId));
}

/**
 * Ingestion, after a batch is committed in Postgres: one INCR per project of the batch, in one
 * round trip. Cached query answers of those projects stop being served (they were computed at an
 * older version).
 */
export async function bumpQueryDataVersions(redis: Redis, teamIds: Iterable<number>): Promise<void> {
  const pipeline = redis.pipeline();
  let any = false;
  for (const teamId of teamIds) {
    pipeline.incr(redisKeys.queryDataVersion(teamId));
    any = true;
  }
  if (!any) return;
  const results = await pipeline.exec();
  const failed = results?.find(([error]) => error);
  if (failed) throw failed[0];
}
