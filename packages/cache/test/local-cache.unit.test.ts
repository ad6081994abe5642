// The cache building block: TTL, size bound (least recently used first), single-flight loads,
// and invalidation that a slow load cannot undo.
import { createLocalCache } from '../src';

function deferred<T>() {
  let resolve!: (v: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

describe('local cache', () => {
  it('expires entries after the TTL, or the per-entry TTL', () => {
    let now = 0;
    const cache = createLocalCache<string, number>({ ttlMs: 100, now: () => now });
    cache.set('a', 1);
    cache.set('b', 2, 10);
    now = 50;
    expect([cache.get('a'), cache.get('b')]).toEqual([1, undefined]);
    now = 100;
    expect(cache.get('a')).toBeUndefined();
  });

  it('caches nothing with a TTL of 0', () => {
    const cache = createLocalCache<string, number>({ ttlMs: 0 });
    cache.set('a', 1);
    expect(cache.get('a')).toBeUndefined();
  });

  it('holds at most maxEntries, dropping the least recently used', () => {
    const cache = createLocalCache<string, number>({ ttlMs: 1000, maxEntries: 2 });
    cache.set('a', 1);
    cache.set('b', 2);
    cache.get('a'); // a is now the most recently used
    cache.set('c', 3);
    expect([cache.get('a'), cache.get('b'), cache.get('c')]).toEqual([1, undefined, 3]);
    expect(cache.size).toBe(2);
  });

  it('shares one load between concurrent misses and serves the stored value afterwards', async () => {
    const cache = createLocalCache<string, number>({ ttlMs: 1000 });
    const gate = deferred<number>();
    let loads = 0;
    const load = () => {
      loads++;
      return gate.promise;
    };
    const both = Promise.all([cache.getOrLoad('k', load), cache.getOrLoad('k', load)]);
    gate.resolve(7);
    expect(await both).toEqual([7, 7]);
    expect(await cache.getOrLoad('k', load)).toBe(7);
    expect(loads).toBe(1);
  });

  it('does not store a load that an invalidation overtook, and loads afresh after it', async () => {
    const cache = createLocalCache<string, string>({ ttlMs: 1000 });
    const gate = deferred<string>();
    const stale = cache.getOrLoad('k', () => gate.promise);
    cache.delete('k');
    gate.resolve('before the revocation');
    expect(await stale).toBe('before the revocation');
    expect(cache.get('k')).toBeUndefined();
    expect(await cache.getOrLoad('k', async () => 'after')).toBe('after');
  });

  it('stores a value for the TTL ttlFor gives it, and nothing when a load fails', async () => {
    let now = 0;
    const cache = createLocalCache<string, string | null>({ ttlMs: 1000, now: () => now });
    await cache.getOrLoad(
      'missing',
      async () => null,
      (v) => (v === null ? 10 : 1000),
    );
    now = 20;
    expect(cache.get('missing')).toBeUndefined();
    await expect(cache.getOrLoad('bad', () => Promise.reject(new Error('down')))).rejects.toThrow('down');
    expect(cache.get('bad')).toBeUndefined();
    expect(await cache.getOrLoad('bad', async () => 'ok')).toBe('ok');
  });
});
