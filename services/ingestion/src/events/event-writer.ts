// Bulk event writes: one multi-row INSERT ... SELECT FROM unnest(arrays) per batch, idempotent
// on the primary key (team_id, uuid), so a redelivered batch inserts nothing twice.
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

export async function insertEvents(client: PoolClient, rows: EventRow[]): Promise<number> {
  if (rows.length === 0) return 0;
  const group = (i: number) => rows.map((r) => r.groups[i] ?? null);
  const result = await client.query(
    `INSERT INTO events (uuid, team_id, event, distinct_id, person_id, properties, timestamp, group_0, group_1, group_2, group_3, group_4)
     SELECT * FROM unnest($1::uuid[], $2::int[], $3::text[], $4::text[], $5::uuid[], $6::jsonb[], $7::timestamptz[],
                          $8::text[], $9::text[], $10::text[], $11::text[], $12::text[])
     ON CONFLICT (team_id, uuid) DO NOTHING`,
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
  return result.rowCount ?? 0;
}

/**
 * Which of these events are stored already. The batch transaction writes an event together
 * with its person and group effects, so a stored event's effects are stored too: skipping it
 * on redelivery keeps person updates exactly-once in effect (versions do not move either).
 */
export async function findStoredEvents(
  client: PoolClient,
  keys: Array<{ teamId: number; uuid: string }>,
): Promise<Set<string>> {
  if (keys.length === 0) return new Set();
  const { rows } = await client.query<{ team_id: number; uuid: string }>(
    `SELECT e.team_id, e.uuid FROM events e
       JOIN unnest($1::int[], $2::uuid[]) AS k(team_id, uuid) ON e.team_id = k.team_id AND e.uuid = k.uuid`,
    [keys.map((k) => k.teamId), keys.map((k) => k.uuid)],
  );
  return new Set(rows.map((r) => `${r.team_id}:${r.uuid}`));
}
