// Person reads and writes for one batch, inside the batch's transaction, set-based: one
// statement loads and locks every person the batch touches (in id order, so concurrent
// workers lock in the same order and cannot deadlock on persons), and a handful of statements
// apply the whole plan. A distinct id that another worker claimed meanwhile shows up as a
// conflict on the (team_id, distinct_id) unique key and fails the attempt, which is retried
// with fresh reads: never read-then-write.
import type { PoolClient } from 'pg';
import { v5 as uuidv5 } from 'uuid';
import { personKey, type LoadedPerson, type PersonPlan, type PersonState } from './person-batch';

// PostHog derives a new person's uuid from team and distinct id, so two workers racing to
// create the same person collide on persons.uuid instead of creating two.
const PERSON_UUID_NAMESPACE = '932979b4-65c3-4424-8467-0b66ec27bc22';
export const personUuidFor = (teamId: number, distinctId: string) =>
  uuidv5(`${teamId}:${distinctId}`, PERSON_UUID_NAMESPACE);

/** Another worker created a distinct id this batch meant to create: retry the batch. */
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

export async function loadPersonsForUpdate(
  client: PoolClient,
  keys: Array<{ teamId: number; distinctId: string }>,
): Promise<Map<string, LoadedPerson>> {
  const loaded = new Map<string, LoadedPerson>();
  if (keys.length === 0) return loaded;
  const { rows } = await client.query<PersonRow>(
    `SELECT d.team_id, d.distinct_id, p.id, p.uuid, p.properties, p.is_identified, p.version, p.created_at
       FROM unnest($1::int[], $2::text[]) AS k(team_id, distinct_id)
       JOIN person_distinct_ids d ON d.team_id = k.team_id AND d.distinct_id = k.distinct_id
       JOIN persons p ON p.id = d.person_id
      ORDER BY p.id, d.id
        FOR UPDATE OF p, d`,
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

export async function applyPersonPlan(client: PoolClient, plan: PersonPlan): Promise<void> {
  const idOf = new Map<PersonState, string>();
  const resolveId = (p: PersonState): string => {
    const id = p.id ?? idOf.get(p);
    if (id === undefined) throw new Error(`person ${p.uuid} has no id`);
    return id;
  };

  if (plan.creates.length > 0) {
    const { rows } = await client.query<{ id: string; uuid: string }>(
      `INSERT INTO persons (uuid, team_id, properties, is_identified, version, created_at)
       SELECT * FROM unnest($1::uuid[], $2::int[], $3::jsonb[], $4::bool[], $5::bigint[], $6::timestamptz[])
       RETURNING id, uuid`,
      [
        plan.creates.map((p) => p.uuid),
        plan.creates.map((p) => p.teamId),
        plan.creates.map((p) => JSON.stringify(p.properties)),
        plan.creates.map((p) => p.isIdentified),
        plan.creates.map((p) => p.version),
        plan.creates.map((p) => p.createdAt),
      ],
    );
    const byUuid = new Map(rows.map((r) => [r.uuid, r.id]));
    for (const p of plan.creates) {
      const id = byUuid.get(p.uuid);
      if (id === undefined) throw new Error(`insert of person ${p.uuid} returned no id`);
      idOf.set(p, id);
    }
  }

  if (plan.distinctIds.length > 0) {
    const result = await client.query(
      `INSERT INTO person_distinct_ids (team_id, distinct_id, person_id, version)
       SELECT t, d, p, 0 FROM unnest($1::int[], $2::text[], $3::bigint[]) AS x(t, d, p)
       ON CONFLICT (team_id, distinct_id) DO NOTHING`,
      [
        plan.distinctIds.map((d) => d.teamId),
        plan.distinctIds.map((d) => d.distinctId),
        plan.distinctIds.map((d) => resolveId(d.person)),
      ],
    );
    if (result.rowCount !== plan.distinctIds.length) {
      throw new PersonConflictError(
        `${plan.distinctIds.length - (result.rowCount ?? 0)} distinct id(s) were claimed concurrently`,
      );
    }
  }

  if (plan.merges.length > 0) {
    const sources = plan.merges.map((m) => m.sourceId);
    const targets = plan.merges.map((m) => resolveId(m.target));
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

  if (plan.updates.length > 0) {
    await client.query(
      `UPDATE persons p
          SET properties = u.properties, is_identified = u.is_identified, version = u.version, created_at = u.created_at
         FROM unnest($1::bigint[], $2::jsonb[], $3::bool[], $4::bigint[], $5::timestamptz[]) AS u(id, properties, is_identified, version, created_at)
        WHERE p.id = u.id`,
      [
        plan.updates.map((p) => p.id),
        plan.updates.map((p) => JSON.stringify(p.properties)),
        plan.updates.map((p) => p.isIdentified),
        plan.updates.map((p) => p.version),
        plan.updates.map((p) => p.createdAt),
      ],
    );
  }
}
