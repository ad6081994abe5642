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
 *
 * `uuid = ANY(array)` rather than a join on unnest: events is partitioned by uuid range, and only
 * a constant list lets the planner prune to the partitions those uuids fall in and probe the
 * uuid index there. A join has to visit every partition, and on a partition whose statistics
 * are stale (a fresh database filling up) it picked a team_id index scan per key: quadratic.
 * The team is checked here, on the few rows found.
 */
export async function findStoredEvents(
  client: PoolClient,
  keys: Array<{ teamId: number; uuid: string }>,
): Promise<Set<string>> {
  if (keys.length === 0) return new Set();
  const wanted = new Set(keys.map((k) => `${k.teamId}:${k.uuid}`));
  const { rows } = await client.query<{ team_id: number; uuid: string }>(
    'SELECT team_id, uuid FROM events WHERE uuid = ANY($1::uuid[])',
    [[...new Set(keys.map((k) => k.uuid))]],
  );
  const stored = new Set<string>();
  for (const r of rows) {
    const key = `${r.team_id}:${r.uuid}`;
    if (wanted.has(key)) stored.add(key);
  }
  return stored;
}
