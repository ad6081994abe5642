// The in-process member count cache: entries expire ttlMs after they were counted (hits never
// extend them), invalidation drops entries and refuses counts taken before it, size is bounded.
import { createMemberCountCache } from '../src/users/member-count-cache';

function clock() {
  let t = 1_000;
  return { now: () => t, advance: (ms: number) => (t += ms) };
}

test('known returns fresh entries only, and hits do not extend them', () => {
  const c = clock();
  const cache = createMemberCountCache({ ttlMs: 5_000, now: c.now });
  cache.store(cache.generation(), [['a', 3]]);
  expect([...cache.known(['a', 'b'])]).toEqual([['a', 3]]);
  c.advance(4_000);
  expect(cache.known(['a']).get('a')).toBe(3);
  c.advance(1_000);
  expect(cache.known(['a']).size).toBe(0);
});

test('invalidate drops the named organizations (or all) and refuses counts taken before it', () => {
  const cache = createMemberCountCache({ ttlMs: 5_000 });
  cache.store(cache.generation(), [
    ['a', 1],
    ['b', 2],
  ]);
  const before = cache.generation();
  cache.invalidate(['a']);
  expect([...cache.known(['a', 'b'])]).toEqual([['b', 2]]);
  cache.store(before, [['a', 1]]); // counted before the change: stale
  expect(cache.known(['a']).size).toBe(0);
  cache.store(cache.generation(), [['a', 0]]);
  expect(cache.known(['a']).get('a')).toBe(0);
  cache.invalidate();
  expect(cache.known(['a', 'b']).size).toBe(0);
});

test('size is bounded (oldest out) and ttl 0 turns it off', () => {
  const cache = createMemberCountCache({ ttlMs: 5_000, maxEntries: 2 });
  cache.store(cache.generation(), [
    ['a', 1],
    ['b', 2],
    ['c', 3],
  ]);
  expect([...cache.known(['a', 'b', 'c'])]).toEqual([
    ['b', 2],
    ['c', 3],
  ]);
  const off = createMemberCountCache({ ttlMs: 0 });
  off.store(off.generation(), [['a', 1]]);
  expect(off.known(['a']).size).toBe(0);
});
