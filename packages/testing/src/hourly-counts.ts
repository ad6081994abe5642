// The invariant event_counts_hourly keeps: for every project, event name and UTC hour, the count
// is the number of stored events. Tests that write or delete events in other ways than ingestion
// (retention, deletion jobs, concurrent batches) check it with this.
import type pg from 'pg';

/** Rows where the hourly counts and a recount of events disagree (empty when they agree). */
export async function hourlyCountsDrift(
  db: Pick<pg.Pool, 'query'>,
): Promise<
  Array<{ team_id: number; event: string; hour: string; counted: string | null; stored: string | null }>
> {
  const { rows } = await db.query(
    `SELECT coalesce(c.team_id, r.team_id) AS team_id, coalesce(c.event, r.event) AS event,
            coalesce(c.hour, r.hour)::text AS hour, c.count::text AS counted, r.n::text AS stored
       FROM event_counts_hourly c
       FULL JOIN (SELECT team_id, event, date_trunc('hour', timestamp, 'UTC') AS hour, count(*) AS n
                    FROM events GROUP BY 1, 2, 3) r
         ON r.team_id = c.team_id AND r.event = c.event AND r.hour = c.hour
      WHERE c.count IS DISTINCT FROM r.n
      ORDER BY 1, 2, 3 LIMIT 20`,
  );
  return rows;
}
