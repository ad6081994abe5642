export {
  redisKeys,
  encodeProjectRef,
  decodeProjectRef,
  encodeFlagList,
  decodeFlagList,
  encodeCohortList,
  decodeCohortList,
  decodeGroupTypes,
  billingPeriod,
} from './keys';
export type { ProjectRef, FlagList, CohortList } from './keys';
export { createRedis } from './redis';
export type { Redis, RedisClientOptions } from './redis';
export { createTokenResolver } from './token-resolver';
export type { TokenResolver, TokenResolverOptions, TokenResolverStats } from './token-resolver';
export {
  writeProjectToken,
  deleteProjectToken,
  revokeProjectToken,
  writeFlagList,
  writeCohortList,
  writeGroupTypes,
  invalidateRemoteConfig,
  bumpQueryDataVersions,
} from './writers';
export { createLocalCache } from './local-cache';
export { createGenerations } from './generations';
export type { Generations } from './generations';
export type { LocalCache, LocalCacheOptions } from './local-cache';
