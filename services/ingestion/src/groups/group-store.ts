// Group type mappings and groups, inside the batch's transaction. A new group type gets the
// lowest free index through an insert guarded by both unique keys (team, type) and (team,
// index): when another worker got there first the insert does nothing and we read theirs.
import type { PoolClient } from 'pg';
import { nextGroupTypeIndex, type GroupTypeMapping, type GroupUpsert } from './group-rules';

export async function loadGroupTypeMappings(
  client: PoolClient,
  teamIds: number[],
): Promise<Map<number, GroupTypeMapping>> {
  const result = new Map<number, GroupTypeMapping>(teamIds.map((t) => [t, new Map()]));
  if (teamIds.length === 0) return result;
  const { rows } = await client.query<{ team_id: number; group_type: string; group_type_index: number }>(
    'SELECT team_id, group_type, group_type_index FROM group_type_mappings WHERE team_id = ANY($1::int[])',
    [teamIds],
  );
  for (const r of rows) result.get(r.team_id)?.set(r.group_type, r.group_type_index);
  return result;
}

/**
 * The index of groupType in the project, creating the mapping when there is room. Returns
 * null when the project already has five types; `created` says whether this call added it.
 */
export async function ensureGroupType(
  client: PoolClient,
  teamId: number,
  groupType: string,
  mapping: GroupTypeMapping,
): Promise<{ index: number | null; created: boolean }> {
  for (let attempt = 0; attempt < 10; attempt++) {
    const known = mapping.get(groupType);
    if (known !== undefined) return { index: known, created: false };
    const index = nextGroupTypeIndex(mapping);
    if (index === null) return { index: null, created: false };
    const { rowCount } = await client.query(
      `INSERT INTO group_type_mappings (team_id, group_type, group_type_index) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING`,
      [teamId, groupType, index],
    );
    if (rowCount === 1) {
      mapping.set(groupType, index);
      return { index, created: true };
    }
    // Lost a race for the type or the index: read what the other worker committed and retry.
    const fresh = (await loadGroupTypeMappings(client, [teamId])).get(teamId) ?? new Map();
    mapping.clear();
    for (const [k, v] of fresh) mapping.set(k, v);
  }
  throw new Error(`could not map group type ${groupType} for team ${teamId}`);
}

/** Creates or updates groups; $group_set merges into the stored properties (shallow, new wins). */
export async function upsertGroups(client: PoolClient, upserts: GroupUpsert[]): Promise<void> {
  if (upserts.length === 0) return;
  await client.query(
    `INSERT INTO groups (team_id, group_type_index, group_key, group_properties, version)
     SELECT t, i, k, p, 0 FROM unnest($1::int[], $2::int[], $3::text[], $4::jsonb[]) AS x(t, i, k, p)
     ON CONFLICT (team_id, group_type_index, group_key)
     DO UPDATE SET group_properties = groups.group_properties || EXCLUDED.group_properties, version = groups.version + 1`,
    [
      upserts.map((u) => u.teamId),
      upserts.map((u) => u.groupTypeIndex),
      upserts.map((u) => u.groupKey),
      upserts.map((u) => JSON.stringify(u.set)),
    ],
  );
}
