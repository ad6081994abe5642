// Bulk event writes: one multi-row INSERT ... SELECT FROM unnest(arrays) per batch, idempotent
// on the primary key (team_id, uuid), so a redelivered batch inserts nothing twice; the insert
// also tells the batch which of its events an earlier delivery stored.
//
// The properties travel as one JSON array text (each event's JSON as prepare serialized it,
// joined with commas) split by json_array_elements, instead of a jsonb[] parameter: pg would
// escape every quote of every event's JSON into an array literal, and Postgres unescape it
// again. Measured on the bench workload: the write path about 10-30% faster without persons.
import type { PoolClient } from 'pg';

export type EventRow = {
  uuid: string;
  teamId: number;
  event: string;
  distinctId: string;
  personUuid: string | null;
  propertiesJson: string;
  timestamp: string;
  groups: Array<string | null>;
};

/**
 * Inserts the rows that are not stored yet. With `returning`, says which ones it inserted (as
 * `<team id>:<uuid>`): the rest were stored by an earlier delivery, so their person and group
 * effects were committed then and must not be applied again.
 */
export async function insertEvents(client: PoolClient, rows: EventRow[]): Promise<number>;
export async function insertEvents(
  client: PoolClient,
  rows: EventRow[],
  returning: true,
): Promise<Set<string>>;
export async function insertEvents(
  client: PoolClient,
  rows: EventRow[],
  returning = false,
): Promise<number | Set<string>> {
  if (rows.length === 0) return returning ? new Set<string>() : 0;
  const group = (i: number) => rows.map((r) => r.groups[i] ?? null);
  const result = await client.query<{ team_id: number; uuid: string }>(
    `INSERT INTO events (uuid, team_id, event, distinct_id, person_id, properties, timestamp, group_0, group_1, group_2, group_3, group_4)
     SELECT u.uuid, u.team_id, u.event, u.distinct_id, u.person_id, p.value::jsonb, u.timestamp, u.g0, u.g1, u.g2, u.g3, u.g4
       FROM unnest($1::uuid[], $2::int[], $3::text[], $4::text[], $5::uuid[], $7::timestamptz[],
                   $8::text[], $9::text[], $10::text[], $11::text[], $12::text[])
              WITH ORDINALITY AS u(uuid, team_id, event, distinct_id, person_id, timestamp, g0, g1, g2, g3, g4, n)
       JOIN json_array_elements($6::json) WITH ORDINALITY AS p(value, n) USING (n)
     ON CONFLICT (team_id, uuid) DO NOTHING${returning ? ' RETURNING team_id, uuid' : ''}`,
    [
      rows.map((r) => r.uuid),
      rows.map((r) => r.teamId),
      rows.map((r) => r.event),
      rows.map((r) => r.distinctId),
      rows.map((r) => r.personUuid),
      `[${rows.map((r) => r.propertiesJson).join(',')}]`,
      rows.map((r) => r.timestamp),
      group(0),
      group(1),
      group(2),
      group(3),
      group(4),
    ],
  );
  if (!returning) return result.rowCount ?? 0;
  return new Set(result.rows.map((r) => `${r.team_id}:${r.uuid}`));
}
