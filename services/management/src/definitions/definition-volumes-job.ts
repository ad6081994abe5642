// The definition_volumes job: event_definitions.volume_30_day, the events of each name in the
// last 30 days, recounted every DEFINITION_VOLUMES_INTERVAL_MS (an hour by default), as PostHog
// refreshes its volumes periodically rather than on every read. One project at a time, one
// GROUP BY over its last 30 days through the events (team_id, timestamp) index; a project's
// names not seen in that window get 0.
import type pg from 'pg';
import type { JobHandler } from '../jobs/job-runner';

export const DEFINITION_VOLUMES_JOB = 'definition_volumes';

/** Queues a recount unless one is queued, running, or finished within the interval. */
export async function scheduleDefinitionVolumes(pool: pg.Pool, intervalMs: number): Promise<void> {
  await pool.query(
    `INSERT INTO background_jobs (kind, dedupe_key)
     SELECT '${DEFINITION_VOLUMES_JOB}', '${DEFINITION_VOLUMES_JOB}'
      WHERE NOT EXISTS (SELECT 1 FROM background_jobs
                         WHERE kind = '${DEFINITION_VOLUMES_JOB}' AND state = 'succeeded'
                           AND finished_at > now() - $1 * interval '1 millisecond')
     ON CONFLICT (dedupe_key) DO NOTHING`,
    [intervalMs],
  );
}

/** Recounts one project's volumes in a transaction of its own (a long count, its own timeout). */
export async function recountVolumes(pool: pg.Pool, teamId: number): Promise<number> {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    await client.query(`SET LOCAL statement_timeout = '10min'`);
    const { rowCount } = await client.query(
      `UPDATE event_definitions d SET volume_30_day = coalesce(v.n, 0)
         FROM event_definitions k
         LEFT JOIN (SELECT event, count(*)::int AS n FROM events
                     WHERE team_id = $1 AND timestamp > now() - interval '30 days' GROUP BY event) v
           ON v.event = k.name
        WHERE d.id = k.id AND k.team_id = $1 AND d.volume_30_day IS DISTINCT FROM coalesce(v.n, 0)`,
      [teamId],
    );
    await client.query('COMMIT');
    return rowCount ?? 0;
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw error;
  } finally {
    client.release();
  }
}

export function definitionVolumesJob(): JobHandler {
  return async (_job, ctx) => {
    const { rows } = await ctx.pool.query<{ team_id: number }>(
      `SELECT DISTINCT team_id FROM event_definitions ORDER BY team_id`,
    );
    let updated = 0;
    for (const [i, { team_id: teamId }] of rows.entries()) {
      updated += await recountVolumes(ctx.pool, teamId);
      await ctx.step({ projects: i + 1, of: rows.length, updated });
    }
    return { kind: 'done', progress: { projects: rows.length, updated } };
  };
}
