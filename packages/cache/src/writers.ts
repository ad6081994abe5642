// Writes done by the owners of the data: management (tokens, flag lists) and ingestion
// (group type mappings). Flag list writes also publish on a channel so decide drops its
// in-process copy at once instead of waiting for its TTL.
import type { Redis } from 'ioredis';
import { encodeFlagList, encodeProjectRef, redisKeys, type FlagList, type ProjectRef } from './keys';

export async function writeProjectToken(redis: Redis, token: string, ref: ProjectRef): Promise<void> {
  await redis.set(redisKeys.token(token), encodeProjectRef(ref));
}

export async function deleteProjectToken(redis: Redis, token: string): Promise<void> {
  await redis.del(redisKeys.token(token));
}

export async function writeFlagList<F>(redis: Redis, list: FlagList<F>): Promise<void> {
  await redis
    .multi()
    .set(redisKeys.flags(list.teamId), encodeFlagList(list))
    .publish(redisKeys.flagsChangedChannel(), String(list.teamId))
    .exec();
}

export async function writeGroupTypes(
  redis: Redis,
  teamId: number,
  mapping: Record<number, string>,
): Promise<void> {
  await redis.set(redisKeys.groupTypes(teamId), JSON.stringify(mapping));
  await redis.publish(redisKeys.flagsChangedChannel(), String(teamId));
}
