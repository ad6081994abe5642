// The flag store's Redis path (fromRedis takes the MGET values; no connection is used here).
import type { Pool } from 'pg';
import { encodeFlagList, type Redis } from '@sett/cache';
import { createSilentLogger } from '@sett/logger';
import { createFlagStore } from '../src/flags/flag-store';

const list = (rollout: number) =>
  encodeFlagList({
    teamId: 5,
    updatedAt: 1,
    flags: [{ id: 1, key: 'a', filters: { groups: [{ properties: [], rollout_percentage: rollout }] } }],
  });

describe('flag store, Redis values', () => {
  it('reuses the definitions built from identical Redis values and rebuilds on any change', () => {
    let now = 0;
    const store = createFlagStore({
      redis: {} as Redis,
      pool: {} as Pool,
      logger: createSilentLogger(),
      ttlMs: 1000,
      now: () => now,
    });
    const first = store.fromRedis(5, [list(50), '{"0":"company"}'])!;
    expect(first.flags[0]!.filters.groups![0]!.rollout_percentage).toBe(50);
    now += 2000; // local copy expired: the caller reads Redis again
    expect(store.cached(5)).toBeUndefined();
    const same = store.fromRedis(5, [list(50), '{"0":"company"}'])!;
    expect(same).toBe(first);
    expect(store.cached(5)).toBe(first);

    const changed = store.fromRedis(5, [list(20), '{"0":"company"}'])!;
    expect(changed).not.toBe(first);
    expect(changed.flags[0]!.filters.groups![0]!.rollout_percentage).toBe(20);
    const regrouped = store.fromRedis(5, [list(20), '{"0":"org"}'])!;
    expect(regrouped).not.toBe(changed);
    expect(regrouped.groupTypes).toEqual({ 0: 'org' });
    expect(store.fromRedis(5, [null, '{}'])).toBeUndefined();
  });

  it('answers and remembers the same bytes again after an invalidation', () => {
    const store = createFlagStore({
      redis: {} as Redis,
      pool: {} as Pool,
      logger: createSilentLogger(),
      ttlMs: 1000,
    });
    store.fromRedis(5, [list(50), '{}']);
    store.invalidate(5);
    expect(store.cached(5)).toBeUndefined();
    // Same bytes after an invalidation: answered, and remembered under the new generation.
    expect(store.fromRedis(5, [list(50), '{}'])).toBeDefined();
    expect(store.cached(5)).toBeDefined();
  });
});
