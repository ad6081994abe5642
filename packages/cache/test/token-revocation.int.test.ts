// Revoked tokens (rotated, or their project deleted): revokeProjectToken drops the Redis entry
// and publishes the token; a resolver listening on its subscriber connection forgets it at
// once, even with a long local TTL, and a lookup that raced the revocation does not store the
// revoked answer.
import { randomUUID } from 'node:crypto';
import { waitFor } from '@sett/testing';
import { createRedis, createTokenResolver, redisKeys, revokeProjectToken, type Redis } from '../src';

const URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
let redis: Redis;
let subscriber: Redis;

beforeAll(() => {
  redis = createRedis({ url: URL, name: 'revocation-test' });
  subscriber = createRedis({ url: URL, name: 'revocation-test-sub' });
});
afterAll(async () => {
  subscriber.disconnect();
  await redis.quit();
});

test('a revoked token is forgotten by a subscribed resolver at once, whatever its TTL', async () => {
  const token = `phc_${randomUUID()}`;
  let live = true;
  const resolver = createTokenResolver({
    redis,
    subscriber,
    ttlMs: 600_000,
    negativeTtlMs: 600_000,
    loadFromDb: async () => (live ? { teamId: 7, organizationId: 'org' } : null),
  });
  await resolver.subscribed;
  expect(await resolver.resolve(token)).toEqual({ teamId: 7, organizationId: 'org' });
  expect(await redis.exists(redisKeys.token(token))).toBe(1);

  live = false;
  await revokeProjectToken(redis, token);
  expect(await redis.exists(redisKeys.token(token))).toBe(0);
  // The signal: the message reaches the subscriber; poll until the resolver answers null.
  await waitFor('the revoked token to stop resolving', async () => (await resolver.resolve(token)) === null, {
    timeoutMs: 5_000,
    intervalMs: 0,
  });
  resolver.close();
  await redis.del(redisKeys.token(token));
});

test('a lookup that started before an invalidation does not cache its (stale) answer', async () => {
  const token = `phc_${randomUUID()}`;
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  let loads = 0;
  const resolver = createTokenResolver({
    loadFromDb: async () => {
      loads++;
      if (loads === 1) await gate;
      return { teamId: loads, organizationId: 'org' };
    },
    ttlMs: 600_000,
  });
  const first = resolver.resolve(token);
  resolver.invalidate(token);
  release();
  expect(await first).toEqual({ teamId: 1, organizationId: 'org' });
  // Not remembered: the next resolve asks again.
  expect(await resolver.resolve(token)).toEqual({ teamId: 2, organizationId: 'org' });
  expect(await resolver.resolve(token)).toEqual({ teamId: 2, organizationId: 'org' });
  expect(loads).toBe(2);
});
