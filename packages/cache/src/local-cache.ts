// The one in-process cache of Sett's services: entries expire after a TTL (per cache, or per
// entry), the cache holds at most `maxEntries` (the least recently used entry goes first), and
// `getOrLoad` is single-flight: concurrent misses for one key share one load. An entry deleted
// or cleared while its load runs is not stored when the load finishes (the load may have read
// what the invalidation was about), so invalidation by pub/sub cannot be undone by a slow load.
// The token resolver, decide's flag, person, quota, remote config and key caches, and
// management's key-context and member-count caches use it. Pure memo tables that never go
// stale (compiled regexes in @sett/flags, JSON fragments in decide's response writer) stay
// plain bounded Maps: they have no TTL to keep and @sett/flags has no I/O dependencies.

export interface LocalCacheOptions {
  /** How long an entry lives; 0 or less caches nothing (loads still run single-flight). */
  ttlMs: number;
  /** Most entries held; past it the least recently used goes. */
  maxEntries?: number;
  now?: () => number;
}

export interface LocalCache<K, V> {
  /** The fresh value of `key`, or undefined. */
  get(key: K): V | undefined;
  /** Stores `value` for `ttlMs` (default: the cache's TTL). */
  set(key: K, value: V, ttlMs?: number): void;
  /**
   * The fresh value, else the result of `load`, shared with every concurrent caller for the
   * same key and stored (for `ttlFor(value)` when given) unless invalidated meanwhile.
   */
  getOrLoad(key: K, load: () => Promise<V>, ttlFor?: (value: V) => number): Promise<V>;
  delete(key: K): void;
  clear(): void;
  readonly size: number;
}

interface Entry<V> {
  value: V;
  expiresAt: number;
}

export function createLocalCache<K, V>(opts: LocalCacheOptions): LocalCache<K, V> {
  const now = opts.now ?? Date.now;
  const maxEntries = Math.max(1, opts.maxEntries ?? 10_000);
  const entries = new Map<K, Entry<V>>();
  const loading = new Map<K, Promise<V>>();
  // Bumped by every delete and clear: a load that started before one does not store its answer.
  let generation = 0;

  // The key last in the Map's order (the most recently used), when known: a hit on it needs no
  // re-insertion, which spares the hot path's one-project caches (flags, quota, token) a Map
  // delete and set on every request.
  let newestKnown = false;
  let newest: K | undefined;

  const get = (key: K): V | undefined => {
    const hit = entries.get(key);
    if (hit === undefined) return undefined;
    if (hit.expiresAt <= now()) {
      entries.delete(key);
      if (newestKnown && newest === key) newestKnown = false;
      return undefined;
    }
    // Most recently used last: re-insertion moves it to the end of the Map's order.
    if (!newestKnown || newest !== key) {
      entries.delete(key);
      entries.set(key, hit);
      newestKnown = true;
      newest = key;
    }
    return hit.value;
  };

  const set = (key: K, value: V, ttlMs = opts.ttlMs): void => {
    if (ttlMs <= 0) return;
    entries.delete(key);
    if (entries.size >= maxEntries) {
      const oldest = entries.keys().next();
      if (!oldest.done) entries.delete(oldest.value);
    }
    entries.set(key, { value, expiresAt: now() + ttlMs });
    newestKnown = true;
    newest = key;
  };

  return {
    get,
    set,
    getOrLoad(key, load, ttlFor) {
      const hit = get(key);
      if (hit !== undefined) return Promise.resolve(hit);
      let pending = loading.get(key);
      if (pending === undefined) {
        const startedAt = generation;
        pending = load()
          .then((value) => {
            if (startedAt === generation) set(key, value, ttlFor ? ttlFor(value) : opts.ttlMs);
            return value;
          })
          .finally(() => loading.delete(key));
        loading.set(key, pending);
      }
      return pending;
    },
    delete(key) {
      generation++;
      entries.delete(key);
      if (newestKnown && newest === key) newestKnown = false;
    },
    clear() {
      generation++;
      entries.clear();
      newestKnown = false;
    },
    get size() {
      return entries.size;
    },
  };
}
