// The background_jobs table: enqueue, claim, lease, finish. A runner claims one due row with
// FOR UPDATE SKIP LOCKED (replicas never claim the same row) and holds it under a lease
// (locked_until) that it renews between steps; a row still 'running' after its lease ran out
// belongs to a process that died and is claimed again, so work survives restarts and crashes.
// Every write after the claim is conditional on locked_by, so a runner that lost its lease
// cannot overwrite the state its successor writes.
import type pg from 'pg';

export type JobState = 'queued' | 'running' | 'succeeded' | 'failed';

export interface JobRow {
  id: string;
  kind: string;
  team_id: number | null;
  state: JobState;
  payload: Record<string, unknown>;
  progress: Record<string, unknown>;
  attempts: number;
  max_attempts: number;
  last_error: string | null;
  dedupe_key: string | null;
  run_after: Date;
  locked_by: string | null;
  locked_until: Date | null;
  created_by_id: number | null;
  created_at: Date;
  started_at: Date | null;
  finished_at: Date | null;
  updated_at: Date;
}

export interface NewJob {
  kind: string;
  teamId?: number | null;
  payload?: Record<string, unknown>;
  dedupeKey?: string | null;
  runAfter?: Date;
  createdById?: number | null;
  maxAttempts?: number;
}

/** A runner lost its lease (it stalled past locked_until and another runner took the job). */
export class LeaseLostError extends Error {
  override readonly name = 'LeaseLostError';
}

type Queryable = Pick<pg.Pool, 'query'> | pg.PoolClient;

export async function enqueueJob(db: Queryable, job: NewJob): Promise<JobRow | null> {
  const { rows } = await db.query<JobRow>(
    `INSERT INTO background_jobs (kind, team_id, payload, dedupe_key, run_after, created_by_id, max_attempts)
     VALUES ($1, $2, $3, $4, coalesce($5, now()), $6, $7)
     ON CONFLICT (dedupe_key) DO NOTHING
     RETURNING *`,
    [
      job.kind,
      job.teamId ?? null,
      JSON.stringify(job.payload ?? {}),
      job.dedupeKey ?? null,
      job.runAfter ?? null,
      job.createdById ?? null,
      job.maxAttempts ?? 10,
    ],
  );
  return rows[0] ?? null;
}

/** Claims the oldest due job (or one whose lease expired), or null when none is due. */
export async function claimJob(db: Queryable, workerId: string, leaseMs: number): Promise<JobRow | null> {
  const { rows } = await db.query<JobRow>(
    `UPDATE background_jobs j
        SET state = 'running', attempts = j.attempts + 1, locked_by = $1,
            locked_until = now() + $2 * interval '1 millisecond',
            started_at = coalesce(j.started_at, now()), updated_at = now()
      WHERE j.id = (
        SELECT id FROM background_jobs
         WHERE (state = 'queued' AND run_after <= now())
            OR (state = 'running' AND locked_until < now())
         ORDER BY run_after, id
         LIMIT 1
         FOR UPDATE SKIP LOCKED)
      RETURNING j.*`,
    [workerId, leaseMs],
  );
  return rows[0] ?? null;
}

/** Extends the lease and records progress; throws LeaseLostError when another runner owns it. */
export async function renewLease(
  db: Queryable,
  job: JobRow,
  workerId: string,
  leaseMs: number,
  progress: Record<string, unknown>,
): Promise<void> {
  const result = await db.query(
    `UPDATE background_jobs SET locked_until = now() + $3 * interval '1 millisecond', progress = $4, updated_at = now()
      WHERE id = $1 AND locked_by = $2 AND state = 'running'`,
    [job.id, workerId, leaseMs, JSON.stringify(progress)],
  );
  if (result.rowCount !== 1) throw new LeaseLostError(`job ${job.id} is no longer held by ${workerId}`);
}

export async function finishJob(
  db: Queryable,
  job: JobRow,
  workerId: string,
  progress: Record<string, unknown>,
): Promise<void> {
  await db.query(
    `UPDATE background_jobs
        SET state = 'succeeded', progress = $3, finished_at = now(), updated_at = now(),
            locked_by = NULL, locked_until = NULL, dedupe_key = NULL, last_error = NULL
      WHERE id = $1 AND locked_by = $2`,
    [job.id, workerId, JSON.stringify(progress)],
  );
}

/** Puts the job back in the queue to run again at `runAfter` (a later phase, or a retry). */
export async function requeueJob(
  db: Queryable,
  job: JobRow,
  workerId: string,
  runAfter: Date,
  progress: Record<string, unknown>,
  opts: { error?: string; resetAttempts?: boolean } = {},
): Promise<void> {
  await db.query(
    `UPDATE background_jobs
        SET state = 'queued', run_after = $3, progress = $4, updated_at = now(),
            locked_by = NULL, locked_until = NULL,
            last_error = coalesce($5, last_error),
            attempts = CASE WHEN $6 THEN 0 ELSE attempts END
      WHERE id = $1 AND locked_by = $2`,
    [job.id, workerId, runAfter, JSON.stringify(progress), opts.error ?? null, opts.resetAttempts ?? false],
  );
}

export async function failJob(db: Queryable, job: JobRow, workerId: string, error: string): Promise<void> {
  await db.query(
    `UPDATE background_jobs
        SET state = 'failed', last_error = $3, finished_at = now(), updated_at = now(),
            locked_by = NULL, locked_until = NULL, dedupe_key = NULL
      WHERE id = $1 AND locked_by = $2`,
    [job.id, workerId, error],
  );
}

export async function readJob(db: Queryable, id: string): Promise<JobRow | null> {
  const { rows } = await db.query<JobRow>(`SELECT * FROM background_jobs WHERE id = $1`, [id]);
  return rows[0] ?? null;
}
