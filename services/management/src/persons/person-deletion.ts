// Erasing people (DELETE .../persons/:uuid/, POST .../persons/bulk_delete/): in one transaction
// the persons, their distinct ids, flag hash-key overrides (FK cascade) and static cohort
// memberships of those distinct ids go, and a person_deletion job is queued that deletes their
// events (when asked) and later sweeps up what events still in Kafka at that moment bring back
// (jobs/person-deletion-job.ts, docs/data-lifecycle.md). Persons are locked in id order, the
// order ingestion locks them in, so a concurrent batch waits instead of deadlocking; once this
// commits, the next event of those distinct ids finds no person and ingestion creates an empty
// one.
import type pg from 'pg';
import { enqueueJob, type JobRow } from '../jobs/job-store';

export const PERSON_DELETION_JOB = 'person_deletion';

export interface PersonDeletionPayload {
  distinct_ids: string[];
  person_uuids: string[];
  delete_events: boolean;
  /** ISO 8601: the moment of the request; events before it are erased, later ones are new data. */
  requested_at: string;
}

export interface PersonDeletionResult {
  personsDeleted: number;
  distinctIds: string[];
  job: JobRow;
}

type Target = { personUuids?: string[]; distinctIds?: string[] };
type Options = { deleteEvents: boolean; userId: number | null };

/**
 * Erases the persons in one transaction and queues their job; null when nothing matched. A
 * deadlock with an ingestion batch (Postgres picks one side to fail) is retried a few times.
 */
export async function deletePersons(
  pool: pg.Pool,
  teamId: number,
  target: Target,
  opts: Options,
): Promise<PersonDeletionResult | null> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await deleteOnce(pool, teamId, target, opts);
    } catch (err) {
      if ((err as { code?: string }).code !== '40P01' || attempt >= 3) throw err;
    }
  }
}

async function deleteOnce(
  pool: pg.Pool,
  teamId: number,
  target: Target,
  opts: Options,
): Promise<PersonDeletionResult | null> {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    const { rows: persons } = await client.query<{ id: string; uuid: string }>(
      `SELECT p.id, p.uuid FROM persons p
        WHERE p.team_id = $1
          AND (p.uuid = ANY($2::uuid[])
               OR p.id IN (SELECT person_id FROM person_distinct_ids WHERE team_id = $1 AND distinct_id = ANY($3::text[])))
        ORDER BY p.id
          FOR UPDATE`,
      [teamId, target.personUuids ?? [], target.distinctIds ?? []],
    );
    const ids = persons.map((p) => p.id);
    const { rows: owned } = await client.query<{ distinct_id: string }>(
      `SELECT distinct_id FROM person_distinct_ids WHERE person_id = ANY($1::bigint[]) ORDER BY id FOR UPDATE`,
      [ids],
    );
    // Distinct ids asked for by name are erased even without a person (events sent with
    // $process_person_profile: false have none).
    const distinctIds = [...new Set([...owned.map((r) => r.distinct_id), ...(target.distinctIds ?? [])])];
    if (distinctIds.length === 0 && persons.length === 0) {
      // Nothing names anyone: no job, the caller answers 404 (one person) or 202 (bulk).
      await client.query('ROLLBACK');
      return null;
    }
    await client.query(`DELETE FROM persons WHERE id = ANY($1::bigint[])`, [ids]);
    await client.query(
      `WITH gone AS (DELETE FROM cohort_members WHERE team_id = $1 AND distinct_id = ANY($2::text[]) RETURNING cohort_id)
       UPDATE cohorts c SET count = greatest(coalesce(c.count, 0) - g.n, 0), updated_at = now()
         FROM (SELECT cohort_id, count(*)::int AS n FROM gone GROUP BY cohort_id) g
        WHERE c.id = g.cohort_id`,
      [teamId, distinctIds],
    );
    const payload: PersonDeletionPayload = {
      distinct_ids: distinctIds,
      person_uuids: persons.map((p) => p.uuid),
      delete_events: opts.deleteEvents,
      requested_at: new Date().toISOString(),
    };
    const job = await enqueueJob(client, {
      kind: PERSON_DELETION_JOB,
      teamId,
      payload: payload as unknown as Record<string, unknown>,
      createdById: opts.userId,
    });
    await client.query('COMMIT');
    return { personsDeleted: persons.length, distinctIds, job: job! };
  } catch (err) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw err;
  } finally {
    client.release();
  }
}
