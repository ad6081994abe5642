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

/** The same for event_property_counts_hourly: each property value's count per hour. */
export async function propertyCountsDrift(
  db: Pick<pg.Pool, 'query'>,
): Promise<Array<{ key: string; counted: string | null; stored: string | null }>> {
  const { rows } = await db.query(
    `WITH raw AS (
       SELECT e.team_id, e.event, v.property, date_trunc('hour', e.timestamp, 'UTC') AS hour, v.overlong, v.value,
              count(*) AS n
         FROM events e CROSS JOIN LATERAL event_counted_values(e.properties) v
        GROUP BY 1, 2, 3, 4, 5, 6)
     SELECT concat_ws(' ', coalesce(c.team_id, r.team_id), coalesce(c.event, r.event), coalesce(c.property, r.property),
                      coalesce(c.hour, r.hour), coalesce(c.overlong, r.overlong), coalesce(c.value, r.value)) AS key,
            c.count::text AS counted, r.n::text AS stored
       FROM event_property_counts_hourly c
       FULL JOIN raw r USING (team_id, event, property, hour, overlong, value)
      WHERE c.count IS DISTINCT FROM r.n
      ORDER BY 1 LIMIT 20`,
  );
  return rows;
}
