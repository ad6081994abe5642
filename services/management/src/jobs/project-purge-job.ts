// The project_purge job: a project soft-deleted through the API (teams.deleted_at set) loses its
// data here, in bounded batches so no statement runs long: events (per partition through the
// (team_id, uuid) key), persons (their distinct ids and flag overrides cascade), groups and group
// types, cohorts, flags and early access features (cascade with the team), then the team row.
// Idempotent: every step deletes what is left, so a job resumed after a crash just continues.
import type pg from 'pg';
import type { JobHandler } from './job-runner';

export const PROJECT_PURGE_JOB = 'project_purge';
const BATCH = 10_000;

/** Queues a purge for every soft-deleted project that has none queued or running. */
export async function schedulePurges(pool: pg.Pool): Promise<void> {
  await pool.query(
    `INSERT INTO background_jobs (kind, team_id, dedupe_key)
     SELECT '${PROJECT_PURGE_JOB}', id, '${PROJECT_PURGE_JOB}:' || id FROM teams WHERE deleted_at IS NOT NULL
     ON CONFLICT (dedupe_key) DO NOTHING`,
  );
}

export function projectPurgeJob(): JobHandler {
  return async (job, ctx) => {
    const teamId = job.team_id!;
    const progress = { events_deleted: 0, persons_deleted: 0, ...job.progress } as Record<string, number>;
    const { rows } = await ctx.pool.query<{ deleted: boolean }>(
      `SELECT deleted_at IS NOT NULL AS deleted FROM teams WHERE id = $1`,
      [teamId],
    );
    // Restored (deleted_at cleared) before the purge ran: nothing to do.
    if (rows[0] && !rows[0].deleted) return { kind: 'done', progress: { ...progress, skipped: 1 } };

    const drain = async (key: string, sql: string) => {
      for (;;) {
        const r = await ctx.pool.query(sql, [teamId]);
        progress[key] = (progress[key] ?? 0) + (r.rowCount ?? 0);
        await ctx.step(progress);
        if ((r.rowCount ?? 0) < BATCH) return;
      }
    };
    await drain(
      'events_deleted',
      `DELETE FROM events WHERE (team_id, uuid) IN (SELECT team_id, uuid FROM events WHERE team_id = $1 LIMIT ${BATCH})`,
    );
    await drain(
      'persons_deleted',
      `DELETE FROM persons WHERE id IN (SELECT id FROM persons WHERE team_id = $1 LIMIT ${BATCH})`,
    );
    await drain(
      'groups_deleted',
      `DELETE FROM groups WHERE id IN (SELECT id FROM groups WHERE team_id = $1 LIMIT ${BATCH})`,
    );
    await ctx.pool.query(`DELETE FROM group_type_mappings WHERE team_id = $1`, [teamId]);
    // Cohort members, flags, early access features and cohorts go with the team (FK cascades),
    // bounded by what a project holds of those.
    await ctx.pool.query(`DELETE FROM cohort_members WHERE team_id = $1`, [teamId]);
    // Finished jobs of the project (person deletions) are history of a project that is gone.
    await ctx.pool.query(
      `DELETE FROM background_jobs WHERE team_id = $1 AND state IN ('succeeded', 'failed') AND id <> $2`,
      [teamId, job.id],
    );
    await ctx.pool.query(`DELETE FROM teams WHERE id = $1 AND deleted_at IS NOT NULL`, [teamId]);
    return { kind: 'done', progress };
  };
}
