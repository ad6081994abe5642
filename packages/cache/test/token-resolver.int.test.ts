// Against the real Redis: the resolver's three layers and its negative caching.
import { randomUUID } from 'node:crypto';
import { createRedis, createTokenResolver, redisKeys, type Redis } from '../src';

describe('token resolver', () => {
  let redis: Redis;
  beforeAll(() => {
    redis = createRedis({ url: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', name: 'test' });
  });
  afterAll(async () => {
    await redis.quit();
  });

  it('loads from the database once, then serves from Redis and the local cache', async () => {
    const token = `phc_${randomUUID()}`;
    const loads: string[] = [];
    const make = () =>
      createTokenResolver({
        redis,
        loadFromDb: async (t) => {
          loads.push(t);
          return t === token ? { teamId: 5, organizationId: 'org' } : null;
        },
      });
    const first = make();
    await expect(Promise.all([first.resolve(token), first.resolve(token)])).resolves.toEqual([
      { teamId: 5, organizationId: 'org' },
      { teamId: 5, organizationId: 'org' },
    ]);
    expect(loads).toEqual([token]);
    await first.resolve(token);
    expect(first.stats()).toMatchObject({ dbLoads: 1 });
    expect(first.stats().localHits).toBeGreaterThanOrEqual(1);
    // A second process finds it in Redis without touching the database.
    const second = make();
    await expect(second.resolve(token)).resolves.toEqual({ teamId: 5, organizationId: 'org' });
    expect(loads).toHaveLength(1);
    expect(second.stats().redisHits).toBe(1);
    await redis.del(redisKeys.token(token));
  });

  it('caches unknown tokens negatively in process and in Redis with a TTL', async () => {
    const token = `phc_unknown_${randomUUID()}`;
    let loads = 0;
    const resolver = createTokenResolver({ redis, loadFromDb: async () => (loads++, null) });
    await expect(resolver.resolve(token)).resolves.toBeNull();
    await expect(resolver.resolve(token)).resolves.toBeNull();
    expect(loads).toBe(1);
    const ttl = await redis.ttl(redisKeys.token(token));
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(30);
    await redis.del(redisKeys.token(token));
  });

  it('expires local entries after the TTL', async () => {
    const token = `phc_${randomUUID()}`;
    let clock = 0;
    let loads = 0;
    const resolver = createTokenResolver({
      redis,
      ttlMs: 1000,
      now: () => clock,
      loadFromDb: async () => (loads++, { teamId: 1, organizationId: 'o' }),
    });
    await resolver.resolve(token);
    await redis.del(redisKeys.token(token));
    clock = 500;
    await resolver.resolve(token);
    expect(loads).toBe(1);
    clock = 2000;
    await resolver.resolve(token);
    expect(loads).toBe(2);
    await redis.del(redisKeys.token(token));
  });

  it('rethrows a Redis failure without a fallback, and answers from the database with one', async () => {
    // A client pointed at a port nobody listens on: every command fails.
    const down = createRedis({ url: 'redis://127.0.0.1:1', name: 'down', commandTimeoutMs: 200 });
    down.on('error', () => undefined);
    const ref = { teamId: 7, organizationId: 'org' };
    let loads = 0;
    const loadFromDb = async () => (loads++, ref);
    const strict = createTokenResolver({ redis: down, loadFromDb });
    await expect(strict.resolve('phc_x')).rejects.toThrow();
    expect(loads).toBe(0);

    const errors: Error[] = [];
    const lenient = createTokenResolver({
      redis: down,
      loadFromDb,
      redisFallback: { onError: (e) => errors.push(e) },
    });
    await expect(lenient.resolve('phc_x')).resolves.toEqual(ref);
    await expect(lenient.resolve('phc_x')).resolves.toEqual(ref);
    expect(loads).toBe(1); // the second answer came from the local cache
    expect(errors.length).toBeGreaterThan(0);

    // A caller's circuit breaker can skip Redis altogether.
    let redisTried = false;
    const skipping = createTokenResolver({
      redis: down,
      loadFromDb,
      redisFallback: { usable: () => false, onError: () => (redisTried = true) },
    });
    await expect(skipping.resolve('phc_y')).resolves.toEqual(ref);
    expect(redisTried).toBe(false);
    down.disconnect();
  });
});
