// Invalidation that a load in flight cannot undo. A cache filled by asynchronous loads must not
// remember a load that started before the key was invalidated (it may carry what the
// invalidation removed): take a stamp before loading, and remember the result only while the
// stamp is still current. `bump` moves one key's stamp (a project's flags changed), `bumpAll`
// every key's (the invalidation channel reconnected and may have missed messages).
export interface Generations<K> {
  /** The key's stamp now: take it before a load starts. */
  stamp(key: K): string;
  /** Whether nothing invalidated the key since `stamp` was taken. */
  current(key: K, stamp: string): boolean;
  bump(key: K): void;
  bumpAll(): void;
}

export function createGenerations<K>(): Generations<K> {
  // One counter per key ever invalidated (a project, a token): bounded by the keys that exist.
  const perKey = new Map<K, number>();
  let epoch = 0;
  const stamp = (key: K) => `${epoch}:${perKey.get(key) ?? 0}`;
  return {
    stamp,
    current: (key, taken) => stamp(key) === taken,
    bump: (key) => void perKey.set(key, (perKey.get(key) ?? 0) + 1),
    bumpAll: () => void epoch++,
  };
}
