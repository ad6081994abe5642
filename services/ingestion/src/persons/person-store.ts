// Person reads and writes for one batch, inside the batch's transaction, set-based: one
// statement reads every person the batch names, one locks the persons its plan changes (in id
// order, so concurrent workers lock in the same order), and a handful of statements apply the
// whole plan. A person or distinct id that another worker created meanwhile shows up
// as a row the insert skipped (ON CONFLICT DO NOTHING, which first waits for that worker's
// transaction): the plan is then dropped back to a savepoint and made again from fresh reads,
// inside the same transaction. Nothing is written from a read taken before its lock.
import type { PoolClient } from 'pg';
import { v5 as uuidv5 } from 'uuid';
import { personKey, type LoadedPerson, type PersonPlan, type PersonState } from './person-batch';

// PostHog derives a new person's uuid from team and distinct id, so two workers racing to
// create the same person collide on persons.uuid instead of creating two.
const PERSON_UUID_NAMESPACE = '932979b4-65c3-4424-8467-0b66ec27bc22';
export const personUuidFor = (teamId: number, distinctId: string) =>
  uuidv5(`${teamId}:${distinctId}`, PERSON_UUID_NAMESPACE);

/** Other workers kept creating persons this batch meant to create: retry the whole batch. */
export class PersonConflictError extends Error {
  override readonly name = 'PersonConflictError';
}

type PersonRow = {
  team_id: number;
  distinct_id: string;
  id: string;
  uuid: string;
  properties: Record<string, unknown>;
  is_identified: boolean;
  version: string;
  created_at: Date;
};

/**
 * The persons of these distinct ids, without locking them: most events only read their person
 * (to stamp the event), so only the persons a plan changes get locked (lockPersons).
 */
export async function loadPersons(
  client: PoolClient,
  keys: Array<{ teamId: number; distinctId: string }>,
): Promise<Map<string, LoadedPerson>> {
  const loaded = new Map<string, LoadedPerson>();
  if (keys.length === 0) return loaded;
  const { rows } = await client.query<PersonRow>(
    `SELECT d.team_id, d.distinct_id, p.id, p.uuid, p.properties, p.is_identified, p.version, p.created_at
       FROM unnest($1::int[], $2::text[]) AS k(team_id, distinct_id)
       JOIN person_distinct_ids d ON d.team_id = k.team_id AND d.distinct_id = k.distinct_id
       JOIN persons p ON p.id = d.person_id`,
    [keys.map((k) => k.teamId), keys.map((k) => k.distinctId)],
  );
  for (const r of rows) {
    loaded.set(personKey(r.team_id, r.distinct_id), {
      id: r.id,
      uuid: r.uuid,
      teamId: r.team_id,
      properties: r.properties ?? {},
      isIdentified: r.is_identified,
      version: Number(r.version),
      createdAt: r.created_at.toISOString(),
    });
  }
  return loaded;
}

/**
 * Locks these persons until the transaction ends, in id order (concurrent workers lock in the
 * same order). A person merged away and deleted meanwhile is simply not there: the caller
 * reads again and plans from what it finds.
 */
export async function lockPersons(client: PoolClient, ids: string[]): Promise<void> {
  if (ids.length === 0) return;
  await client.query('SELECT id FROM persons WHERE id = ANY($1::bigint[]) ORDER BY id FOR UPDATE', [ids]);
}

/**
 * Writes a plan: creates, then distinct ids, then merges, then updates (four short steps below).
 * Returns false, having written possibly part of it, when another worker created one of the
 * plan's persons or distinct ids first: the caller rolls back to its savepoint and plans again
 * from fresh reads. Each insert waits for the other worker's transaction, so the fresh read
 * sees what it committed.
 */
export async function applyPersonPlan(client: PoolClient, plan: PersonPlan): Promise<boolean> {
  const ids = await insertPersons(client, plan.creates);
  if (!ids) return false;
  const resolveId = (p: PersonState): string => {
    const id = p.id ?? ids.get(p);
    if (id === undefined) throw new Error(`person ${p.uuid} has no id`);
    return id;
  };
  if (!(await insertDistinctIds(client, plan.distinctIds, resolveId))) return false;
  await movePersonsMergedAway(client, plan.merges, resolveId);
  await updatePersons(client, plan.updates);
  return true;
}

/** New persons' database ids, or null when another worker created one of them first. */
async function insertPersons(
  client: PoolClient,
  creates: PersonState[],
): Promise<Map<PersonState, string> | null> {
  const ids = new Map<PersonState, string>();
  if (creates.length === 0) return ids;
  // In uuid order: two workers inserting the same new persons wait on each other in one order.
  const sorted = [...creates].sort((a, b) => (a.uuid < b.uuid ? -1 : a.uuid > b.uuid ? 1 : 0));
  const { rows } = await client.query<{ id: string; uuid: string }>(
    `INSERT INTO persons (uuid, team_id, properties, is_identified, version, created_at)
     SELECT * FROM unnest($1::uuid[], $2::int[], $3::jsonb[], $4::bool[], $5::bigint[], $6::timestamptz[])
     ON CONFLICT (uuid) DO NOTHING
     RETURNING id, uuid`,
    [
      sorted.map((p) => p.uuid),
      sorted.map((p) => p.teamId),
      sorted.map((p) => JSON.stringify(p.properties)),
      sorted.map((p) => p.isIdentified),
      sorted.map((p) => p.version),
      sorted.map((p) => p.createdAt),
    ],
  );
  if (rows.length !== sorted.length) return null;
  const byUuid = new Map(rows.map((r) => [r.uuid, r.id]));
  for (const p of sorted) {
    const id = byUuid.get(p.uuid);
    if (id === undefined) throw new Error(`insert of person ${p.uuid} returned no id`);
    ids.set(p, id);
  }
  return ids;
}

/** False when another worker claimed one of these distinct ids first. */
async function insertDistinctIds(
  client: PoolClient,
  distinctIds: PersonPlan['distinctIds'],
  resolveId: (p: PersonState) => string,
): Promise<boolean> {
  if (distinctIds.length === 0) return true;
  const sorted = [...distinctIds].sort((a, b) =>
    a.teamId !== b.teamId
      ? a.teamId - b.teamId
      : a.distinctId < b.distinctId
        ? -1
        : a.distinctId > b.distinctId
          ? 1
          : 0,
  );
  const result = await client.query(
    `INSERT INTO person_distinct_ids (team_id, distinct_id, person_id, version)
     SELECT t, d, p, 0 FROM unnest($1::int[], $2::text[], $3::bigint[]) AS x(t, d, p)
     ON CONFLICT (team_id, distinct_id) DO NOTHING`,
    [sorted.map((d) => d.teamId), sorted.map((d) => d.distinctId), sorted.map((d) => resolveId(d.person))],
  );
  return result.rowCount === sorted.length;
}

async function movePersonsMergedAway(
  client: PoolClient,
  merges: PersonPlan['merges'],
  resolveId: (p: PersonState) => string,
): Promise<void> {
  if (merges.length === 0) return;
  const sources = merges.map((m) => m.sourceId);
  const targets = merges.map((m) => resolveId(m.target));
  // Earlier events keep resolving: their distinct ids now point at the survivor.
  await client.query(
    `UPDATE person_distinct_ids d SET person_id = m.tgt, version = d.version + 1
       FROM unnest($1::bigint[], $2::bigint[]) AS m(src, tgt)
      WHERE d.person_id = m.src`,
    [sources, targets],
  );
  // Flag rollout overrides follow the person (the survivor's own win), as in PostHog.
  await client.query(
    `INSERT INTO feature_flag_hash_key_overrides (team_id, person_id, feature_flag_key, hash_key)
     SELECT o.team_id, m.tgt, o.feature_flag_key, o.hash_key
       FROM feature_flag_hash_key_overrides o
       JOIN unnest($1::bigint[], $2::bigint[]) AS m(src, tgt) ON o.person_id = m.src
     ON CONFLICT (team_id, person_id, feature_flag_key) DO NOTHING`,
    [sources, targets],
  );
  await client.query(`DELETE FROM persons WHERE id = ANY($1::bigint[])`, [sources]);
}

async function updatePersons(client: PoolClient, updates: PersonState[]): Promise<void> {
  if (updates.length === 0) return;
  await client.query(
    `UPDATE persons p
        SET properties = u.properties, is_identified = u.is_identified, version = u.version, created_at = u.created_at
       FROM unnest($1::bigint[], $2::jsonb[], $3::bool[], $4::bigint[], $5::timestamptz[]) AS u(id, properties, is_identified, version, created_at)
      WHERE p.id = u.id`,
    [
      updates.map((p) => p.id),
      updates.map((p) => JSON.stringify(p.properties)),
      updates.map((p) => p.isIdentified),
      updates.map((p) => p.version),
      updates.map((p) => p.createdAt),
    ],
  );
}
