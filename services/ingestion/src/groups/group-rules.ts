// Pure group rules: up to five group types per project, each mapped once and for good to an
// index 0..4 (the events table has five group columns); what a $groupidentify asks for; and
// which group columns an event's $groups fill (only for types that already have an index).

export const MAX_GROUP_TYPES = 5;

export type GroupTypeMapping = Map<string, number>;

/** The lowest free index, or null when the project already has MAX_GROUP_TYPES types. */
export function nextGroupTypeIndex(mapping: GroupTypeMapping): number | null {
  const used = new Set(mapping.values());
  for (let i = 0; i < MAX_GROUP_TYPES; i++) if (!used.has(i)) return i;
  return null;
}

const keyOf = (v: unknown): string | null =>
  typeof v === 'string' && v !== '' ? v : typeof v === 'number' && Number.isFinite(v) ? String(v) : null;

export type GroupIdentify = { groupType: string; groupKey: string; set: Record<string, unknown> };

export function groupIdentifyOf(event: string, properties: Record<string, unknown>): GroupIdentify | null {
  if (event !== '$groupidentify') return null;
  const groupType = properties.$group_type;
  const groupKey = keyOf(properties.$group_key);
  if (typeof groupType !== 'string' || groupType === '' || groupKey === null) return null;
  const set = properties.$group_set;
  return {
    groupType,
    groupKey,
    set:
      typeof set === 'object' && set !== null && !Array.isArray(set) ? (set as Record<string, unknown>) : {},
  };
}

/** group_0..group_4 of an event from its $groups; unknown types and empty keys are ignored. */
export function groupColumns(
  mapping: GroupTypeMapping | undefined,
  properties: Record<string, unknown>,
): Array<string | null> {
  const columns: Array<string | null> = [null, null, null, null, null];
  const groups = properties.$groups;
  if (!mapping || typeof groups !== 'object' || groups === null || Array.isArray(groups)) return columns;
  for (const [type, value] of Object.entries(groups as Record<string, unknown>)) {
    const index = mapping.get(type);
    const key = keyOf(value);
    if (index !== undefined && key !== null) columns[index] = key;
  }
  return columns;
}

export type GroupUpsert = {
  teamId: number;
  groupTypeIndex: number;
  groupKey: string;
  set: Record<string, unknown>;
};

/**
 * One upsert per group per batch: later $group_set values win, in event order. Sorted by key so
 * that concurrent workers lock group rows in the same order (no deadlocks).
 */
export function foldGroupUpserts(items: GroupUpsert[]): GroupUpsert[] {
  const byKey = new Map<string, GroupUpsert>();
  for (const item of items) {
    const k = `${item.teamId}\u0001${item.groupTypeIndex}\u0001${item.groupKey}`;
    const prev = byKey.get(k);
    byKey.set(k, prev ? { ...prev, set: { ...prev.set, ...item.set } } : { ...item, set: { ...item.set } });
  }
  return [...byKey.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, v]) => v);
}
