// Member counts per organization, cached in process for a few seconds. The User shape carries
// its current organization's member_count; counting is O(members) whatever the plan (a seq
// scan and an index-only scan of (organization_id, user_id) both take ~1 ms per 10k members),
// so a dashboard reading users of a large organization would pay that on every request. An
// entry lives ttlMs from the query that counted it and is never extended by hits; a membership
// change made through this process's API (deleting a user) drops the entries of its
// organizations, and the generation makes sure a count taken before that is not stored after.
// Changes made elsewhere (another replica, the database directly) show within ttlMs.

import { createLocalCache } from '@sett/cache';

export interface MemberCountCache {
  /** Fresh counts of those organizations that are cached (others are left out). */
  known(organizationIds: Iterable<string>): Map<string, number>;
  /** Taken before a query; pass it to store() with the counts that query computed. */
  generation(): number;
  /** Caches counts computed by a query started at `generation` (ignored if invalidated since). */
  store(generation: number, counts: Iterable<readonly [string, number]>): void;
  /** Drops the counts of these organizations (all when none are given). */
  invalidate(organizationIds?: Iterable<string>): void;
}

export function createMemberCountCache(
  opts: { ttlMs?: number; maxEntries?: number; now?: () => number } = {},
): MemberCountCache {
  const ttlMs = opts.ttlMs ?? 5_000;
  const counts = createLocalCache<string, number>({ ttlMs, maxEntries: opts.maxEntries, now: opts.now });
  let gen = 0;

  return {
    known(organizationIds) {
      const out = new Map<string, number>();
      if (counts.size === 0) return out;
      for (const id of organizationIds) {
        const count = counts.get(id);
        if (count !== undefined) out.set(id, count);
      }
      return out;
    },
    generation() {
      return gen;
    },
    store(generation, computed) {
      if (ttlMs <= 0 || generation !== gen) return;
      for (const [id, count] of computed) counts.set(id, count);
    },
    invalidate(organizationIds) {
      gen++;
      if (!organizationIds) counts.clear();
      else for (const id of organizationIds) counts.delete(id);
    },
  };
}
