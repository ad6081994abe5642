// Stored person and group properties, and experience-continuity hash keys, read from the
// tables ingestion writes. Decide asks only when a flag needs a property the request did not
// give (docs/interface.md, "Flag evaluation"); answers are cached briefly in process.
import { createLocalCache } from '@sett/cache';
import type { Pool } from 'pg';
import { cleanString, storedName } from '@sett/schemas';

export interface StoredPerson {
  personId: string;
  properties: Record<string, unknown>;
}

export interface GroupRef {
  groupTypeIndex: number;
  groupKey: string;
}

export interface PersonStore {
  /** The person of a distinct id with its properties; null when there is none. */
  person(teamId: number, distinctId: string): Promise<StoredPerson | null>;
  /**
   * Ids of the static cohorts the person of a distinct id belongs to: a member through any of
   * the person's distinct ids, or through the id itself (an id with no person yet). Batched like
   * person lookups: one query per project per event-loop turn.
   */
  staticCohorts(teamId: number, distinctId: string): Promise<ReadonlySet<number>>;
  /** Properties of each requested group, keyed `${index}:${key}`; absent groups are left out. */
  groups(teamId: number, refs: GroupRef[]): Promise<Map<string, Record<string, unknown>>>;
  /**
   * Experience continuity: when the request names the anonymous id the person had before
   * identifying, store it as the hash key of every continuity flag the person has no key for
   * yet (first write wins, as in PostHog), then return flag key -> hash key.
   */
  hashKeyOverrides(
    teamId: number,
    distinctId: string,
    anonDistinctId: string | undefined,
    flagKeys: string[],
  ): Promise<Record<string, string>>;
  stats(): PersonStoreStats;
}

export interface PersonStoreStats {
  /** Person queries sent (a batch of lookups is one query). */
  personQueries: number;
  /** Of those, queries that carried more than one distinct id. */
  personBatches: number;
  groupQueries: number;
  overrideQueries: number;
  /** Static cohort membership queries sent (a batch is one query). */
  cohortQueries: number;
}

export interface PersonStoreOptions {
  pool: Pool;
  ttlMs: number;
  maxEntries?: number;
  /** Most distinct ids in one batched person query. */
  maxBatch?: number;
}

export function groupCacheKey(ref: GroupRef): string {
  return `${ref.groupTypeIndex}:${ref.groupKey}`;
}

export function createPersonStore(opts: PersonStoreOptions): PersonStore {
  const bounds = { ttlMs: opts.ttlMs, maxEntries: opts.maxEntries ?? 50_000 };
  const persons = createLocalCache<string, StoredPerson | null>(bounds);
  const groups = createLocalCache<string, Record<string, unknown> | null>(bounds);
  const overrides = createLocalCache<string, Record<string, string>>(bounds);
  const memberships = createLocalCache<string, ReadonlySet<number>>(bounds);
  const stats: PersonStoreStats = {
    personQueries: 0,
    groupQueries: 0,
    overrideQueries: 0,
    personBatches: 0,
    cohortQueries: 0,
  };

  // Person lookups that miss the cache are batched: those arriving in the same turn of the
  // event loop (setImmediate runs after the I/O callbacks of that turn) share one query per
  // project, so a busy process makes one round trip where it would make dozens. Concurrent
  // lookups of one distinct id share its pending answer. A distinct id without a person is
  // cached as null like any answer (the negative cache), so repeated unknown ids cost nothing.
  const personLoader = createBatchLoader<StoredPerson | null>({
    maxBatch: opts.maxBatch ?? 500,
    async loadMany(teamId, distinctIds) {
      stats.personQueries++;
      if (distinctIds.length > 1) stats.personBatches++;
      const { rows } = await opts.pool.query<{
        distinct_id: string;
        id: string;
        properties: Record<string, unknown> | null;
      }>(
        `SELECT pdi.distinct_id, p.id::text AS id, p.properties
           FROM person_distinct_ids pdi JOIN persons p ON p.id = pdi.person_id
          WHERE pdi.team_id = $1 AND pdi.distinct_id = ANY($2::text[])`,
        [teamId, distinctIds],
      );
      const found = new Map<string, StoredPerson | null>();
      for (const row of rows)
        found.set(row.distinct_id, { personId: row.id, properties: asObject(row.properties) });
      for (const distinctId of distinctIds) {
        const person = found.get(distinctId) ?? null;
        found.set(distinctId, person);
        persons.set(`${teamId}\u0000${distinctId}`, person);
      }
      return found;
    },
  });

  // Static cohort membership for a batch of distinct ids: each id with every distinct id of its
  // person, then those ids' rows in cohort_members, found through its (team_id, distinct_id)
  // index: the cost is the person's ids, not the cohort's size.
  const membershipLoader = createBatchLoader<ReadonlySet<number>>({
    maxBatch: opts.maxBatch ?? 500,
    async loadMany(teamId, distinctIds) {
      stats.cohortQueries++;
      const { rows } = await opts.pool.query<{ asked: string; cohort_id: number }>(
        `WITH asked AS (SELECT unnest($2::text[]) AS distinct_id),
              ids AS (
                SELECT a.distinct_id AS asked, a.distinct_id AS member FROM asked a
                UNION
                SELECT a.distinct_id, other.distinct_id
                  FROM asked a
                  JOIN person_distinct_ids pdi ON pdi.team_id = $1 AND pdi.distinct_id = a.distinct_id
                  JOIN person_distinct_ids other ON other.team_id = $1 AND other.person_id = pdi.person_id
              )
         SELECT DISTINCT ids.asked, cm.cohort_id
           FROM ids JOIN cohort_members cm ON cm.team_id = $1 AND cm.distinct_id = ids.member`,
        [teamId, distinctIds],
      );
      const found = new Map<string, Set<number>>();
      for (const distinctId of distinctIds) found.set(distinctId, new Set());
      for (const row of rows) found.get(row.asked)?.add(Number(row.cohort_id));
      for (const [distinctId, ids] of found) memberships.set(`${teamId}\u0000${distinctId}`, ids);
      return found;
    },
  });

  return {
    staticCohorts(teamId, distinctId) {
      const stored = storedName(distinctId);
      const hit = memberships.get(`${teamId}\u0000${stored}`);
      if (hit !== undefined) return Promise.resolve(hit);
      return membershipLoader.load(teamId, stored);
    },

    person(teamId, distinctId) {
      const stored = storedName(distinctId);
      const hit = persons.get(`${teamId}\u0000${stored}`);
      if (hit !== undefined) return Promise.resolve(hit);
      return personLoader.load(teamId, stored);
    },

    async groups(teamId, refs) {
      const out = new Map<string, Record<string, unknown>>();
      const missing: GroupRef[] = [];
      for (const ref of refs) {
        // Group keys are stored cleaned (NUL, lone surrogates as U+FFFD) like all event data;
        // the answer stays keyed by the key the request gave.
        const stored = { groupTypeIndex: ref.groupTypeIndex, groupKey: cleanString(ref.groupKey) };
        const hit = groups.get(`${teamId}:${groupCacheKey(stored)}`);
        if (hit === undefined) missing.push(stored);
        else if (hit !== null) out.set(groupCacheKey(ref), hit);
      }
      if (missing.length === 0) return out;
      stats.groupQueries++;
      const { rows } = await opts.pool.query<{
        group_type_index: number;
        group_key: string;
        group_properties: unknown;
      }>(
        `SELECT g.group_type_index, g.group_key, g.group_properties
           FROM groups g
           JOIN unnest($2::int[], $3::text[]) AS want(idx, key)
             ON g.group_type_index = want.idx AND g.group_key = want.key
          WHERE g.team_id = $1`,
        [teamId, missing.map((r) => r.groupTypeIndex), missing.map((r) => r.groupKey)],
      );
      const found = new Map(
        rows.map((r) => [
          groupCacheKey({ groupTypeIndex: r.group_type_index, groupKey: r.group_key }),
          asObject(r.group_properties),
        ]),
      );
      for (const ref of missing) {
        const key = groupCacheKey(ref);
        const props = found.get(key) ?? null;
        groups.set(`${teamId}:${key}`, props);
      }
      for (const ref of refs) {
        const props = found.get(groupCacheKey({ ...ref, groupKey: cleanString(ref.groupKey) }));
        if (props) out.set(groupCacheKey(ref), props);
      }
      return out;
    },

    async hashKeyOverrides(teamId, requestDistinctId, anonDistinctId, flagKeys) {
      if (flagKeys.length === 0) return {};
      const distinctId = storedName(requestDistinctId);
      const storedAnon = anonDistinctId === undefined ? undefined : storedName(anonDistinctId);
      const anon = storedAnon && storedAnon !== distinctId ? storedAnon : undefined;
      const cacheKey = `${teamId}\u0000${distinctId}\u0000${anon ?? ''}\u0000${flagKeys.join('\u0001')}`;
      const hit = overrides.get(cacheKey);
      if (hit) return hit;
      stats.overrideQueries++;
      const distinctIds = anon ? [distinctId, anon] : [distinctId];
      if (anon) {
        // As PostHog: for the persons behind both ids, each continuity flag without a hash key
        // gets the anonymous id; an existing key is never replaced (ON CONFLICT DO NOTHING).
        await opts.pool.query(
          `INSERT INTO feature_flag_hash_key_overrides (team_id, person_id, feature_flag_key, hash_key)
           SELECT DISTINCT $1::int, pdi.person_id, flag.key, $3::text
             FROM person_distinct_ids pdi CROSS JOIN unnest($4::text[]) AS flag(key)
            WHERE pdi.team_id = $1 AND pdi.distinct_id = ANY($2::text[])
           ON CONFLICT (team_id, person_id, feature_flag_key) DO NOTHING`,
          [teamId, distinctIds, anon, flagKeys],
        );
      }
      const { rows } = await opts.pool.query<{
        distinct_id: string;
        feature_flag_key: string;
        hash_key: string;
      }>(
        `SELECT pdi.distinct_id, o.feature_flag_key, o.hash_key
           FROM feature_flag_hash_key_overrides o
           JOIN person_distinct_ids pdi ON pdi.person_id = o.person_id AND pdi.team_id = o.team_id
          WHERE o.team_id = $1 AND pdi.distinct_id = ANY($2::text[]) AND o.feature_flag_key = ANY($3::text[])`,
        [teamId, distinctIds, flagKeys],
      );
      // The key of the identified id's own person wins over the anonymous person's.
      const result = Object.create(null) as Record<string, string>; // keyed by flag key
      for (const row of rows) if (row.distinct_id !== distinctId) result[row.feature_flag_key] = row.hash_key;
      for (const row of rows) if (row.distinct_id === distinctId) result[row.feature_flag_key] = row.hash_key;
      overrides.set(cacheKey, result);
      return result;
    },

    stats: () => ({ ...stats }),
  };
}

function asObject(value: unknown): Record<string, unknown> {
  if (value && typeof value === 'object' && !Array.isArray(value)) return value as Record<string, unknown>;
  if (typeof value === 'string') {
    try {
      const parsed = JSON.parse(value) as unknown;
      if (parsed && typeof parsed === 'object' && !Array.isArray(parsed))
        return parsed as Record<string, unknown>;
    } catch {
      // not JSON: no properties
    }
  }
  return {};
}

interface Waiter<V> {
  resolve(value: V): void;
  reject(err: unknown): void;
}

/**
 * Collects keys asked for in one turn of the event loop, per project, and loads them with one
 * call per project (and per `maxBatch` keys). A failed load rejects every waiter of its batch.
 */
export function createBatchLoader<V>(opts: {
  maxBatch: number;
  loadMany(teamId: number, keys: string[]): Promise<Map<string, V>>;
}): { load(teamId: number, key: string): Promise<V> } {
  let pending = new Map<number, Map<string, Array<Waiter<V>>>>();
  let scheduled = false;

  function flush(): void {
    scheduled = false;
    const batches = pending;
    pending = new Map();
    for (const [teamId, waitersByKey] of batches) {
      const keys = [...waitersByKey.keys()];
      for (let i = 0; i < keys.length; i += opts.maxBatch) {
        const chunk = keys.slice(i, i + opts.maxBatch);
        opts.loadMany(teamId, chunk).then(
          (values) => {
            for (const key of chunk) for (const w of waitersByKey.get(key)!) w.resolve(values.get(key) as V);
          },
          (err: unknown) => {
            for (const key of chunk) for (const w of waitersByKey.get(key)!) w.reject(err);
          },
        );
      }
    }
  }

  return {
    load(teamId, key) {
      return new Promise<V>((resolve, reject) => {
        let byKey = pending.get(teamId);
        if (!byKey) pending.set(teamId, (byKey = new Map()));
        let waiters = byKey.get(key);
        if (!waiters) byKey.set(key, (waiters = []));
        waiters.push({ resolve, reject });
        if (!scheduled) {
          scheduled = true;
          setImmediate(flush);
        }
      });
    },
  };
}
