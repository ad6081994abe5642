// Bulk event writes: one multi-row INSERT ... SELECT FROM unnest(arrays) per batch, idempotent
// on the primary key (team_id, uuid), so a redelivered batch inserts nothing twice; the insert
// also tells the batch which of its events an earlier delivery stored.
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
     SELECT * FROM unnest($1::uuid[], $2::int[], $3::text[], $4::text[], $5::uuid[], $6::jsonb[], $7::timestamptz[],
                          $8::text[], $9::text[], $10::text[], $11::text[], $12::text[])
     ON CONFLICT (team_id, uuid) DO NOTHING${returning ? ' RETURNING team_id, uuid' : ''}`,
    [
      rows.map((r) => r.uuid),
      rows.map((r) => r.teamId),
      rows.map((r) => r.event),
      rows.map((r) => r.distinctId),
      rows.map((r) => r.personUuid),
      rows.map((r) => r.propertiesJson),
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
