// One batch, one Postgres transaction: events already stored are skipped (their person and
// group effects were committed with them), persons are loaded and locked, the batch's person
// intents are applied in order in memory and written set-based, group types and groups are
// upserted, and all events go in with one bulk insert. Lock order is fixed (persons by id,
// then group type mappings, then groups by key, then events) so concurrent workers do not
// deadlock in the common case; the rare deadlock or lost race is retried by the caller.
import type { Pool, PoolClient } from 'pg';
import { findStoredEvents, insertEvents, type EventRow } from '../events/event-writer';
import {
  foldGroupUpserts,
  groupColumns,
  groupIdentifyOf,
  type GroupTypeMapping,
  type GroupUpsert,
} from '../groups/group-rules';
import { ensureGroupType, loadGroupTypeMappings, upsertGroups } from '../groups/group-store';
import { personKey, simulatePersonBatch } from '../persons/person-batch';
import { personIntentOf, type PersonIntent } from '../persons/person-rules';
import { applyPersonPlan, loadPersonsForUpdate, personUuidFor } from '../persons/person-store';
import type { TeamEvent } from './types';

export type WriteBatchResult = {
  /** Rows the insert added (fewer than events when another delivery stored some meanwhile). */
  inserted: number;
  /** Events skipped because an earlier delivery had stored them. */
  alreadyStored: number;
  personsCreated: number;
  personsUpdated: number;
  merges: number;
  refusedMerges: number;
  /** $groupidentify events whose group type did not fit (more than five types). */
  groupTypeLimited: number;
  groupsUpserted: number;
  /** Group type mappings of the projects this batch touched, after the batch. */
  groupTypes: Map<number, GroupTypeMapping>;
  /** Projects that got a new group type in this batch. */
  newGroupTypeTeams: Set<number>;
};

const hasGroups = (e: TeamEvent) =>
  e.event === '$groupidentify' || (typeof e.properties.$groups === 'object' && e.properties.$groups !== null);

export async function writeBatchInTransaction(
  client: PoolClient,
  events: TeamEvent[],
): Promise<WriteBatchResult> {
  // 1. Redelivery: only events with effects beyond their own row need the check.
  let todo = events;
  let alreadyStored = 0;
  if (events.some((e) => e.processPerson || e.event === '$groupidentify')) {
    const stored = await findStoredEvents(client, events);
    if (stored.size > 0) {
      todo = events.filter((e) => !stored.has(`${e.teamId}:${e.uuid}`));
      alreadyStored = events.length - todo.length;
    }
  }

  // 2. Persons, in event order.
  const personEvents: Array<{ index: number; teamId: number; timestamp: string; intent: PersonIntent }> = [];
  todo.forEach((e, index) => {
    if (e.processPerson)
      personEvents.push({
        index,
        teamId: e.teamId,
        timestamp: e.timestamp,
        intent: personIntentOf(e.event, e.distinctId, e.properties),
      });
  });
  const personUuidByIndex = new Map<number, string>();
  let personsCreated = 0;
  let personsUpdated = 0;
  let merges = 0;
  let refusedMerges = 0;
  if (personEvents.length > 0) {
    const keys = new Map<string, { teamId: number; distinctId: string }>();
    const addKey = (teamId: number, distinctId: string) =>
      keys.set(personKey(teamId, distinctId), { teamId, distinctId });
    for (const { teamId, intent } of personEvents) {
      if (intent.kind === 'update') addKey(teamId, intent.distinctId);
      else {
        addKey(teamId, intent.targetDistinctId);
        addKey(teamId, intent.sourceDistinctId);
      }
    }
    const loaded = await loadPersonsForUpdate(client, [...keys.values()]);
    const { personUuids, plan } = simulatePersonBatch(personEvents, loaded, personUuidFor);
    await applyPersonPlan(client, plan);
    personEvents.forEach((p, i) => personUuidByIndex.set(p.index, personUuids[i] as string));
    personsCreated = plan.creates.length;
    personsUpdated = plan.updates.length;
    merges = plan.mergeCount;
    refusedMerges = plan.refusedMerges;
  }

  // 3. Group types and groups.
  const groupTeams = [...new Set(todo.filter(hasGroups).map((e) => e.teamId))];
  const groupTypes = await loadGroupTypeMappings(client, groupTeams);
  const newGroupTypeTeams = new Set<number>();
  const upserts: GroupUpsert[] = [];
  let groupTypeLimited = 0;
  for (const e of todo) {
    const identify = groupIdentifyOf(e.event, e.properties);
    if (!identify) continue;
    const mapping = groupTypes.get(e.teamId) as GroupTypeMapping;
    const { index, created } = await ensureGroupType(client, e.teamId, identify.groupType, mapping);
    if (created) newGroupTypeTeams.add(e.teamId);
    if (index === null) groupTypeLimited++;
    else
      upserts.push({
        teamId: e.teamId,
        groupTypeIndex: index,
        groupKey: identify.groupKey,
        set: identify.set,
      });
  }
  const folded = foldGroupUpserts(upserts);
  await upsertGroups(client, folded);

  // 4. Events.
  const rows: EventRow[] = todo.map((e, index) => ({
    uuid: e.uuid,
    teamId: e.teamId,
    event: e.event,
    distinctId: e.distinctId,
    personUuid: personUuidByIndex.get(index) ?? null,
    propertiesJson: e.propertiesJson,
    timestamp: e.timestamp,
    groups: groupColumns(groupTypes.get(e.teamId), e.properties),
  }));
  const inserted = await insertEvents(client, rows);

  return {
    inserted,
    alreadyStored,
    personsCreated,
    personsUpdated,
    merges,
    refusedMerges,
    groupTypeLimited,
    groupsUpserted: folded.length,
    groupTypes,
    newGroupTypeTeams,
  };
}

export async function writeBatch(pool: Pool, events: TeamEvent[]): Promise<WriteBatchResult> {
  const client = await pool.connect();
  let broken: Error | undefined;
  try {
    await client.query('BEGIN');
    const result = await writeBatchInTransaction(client, events);
    await client.query('COMMIT');
    return result;
  } catch (error) {
    try {
      await client.query('ROLLBACK');
    } catch (rollbackError) {
      // The connection is gone: the pool must discard it, not hand it out again.
      broken = rollbackError as Error;
    }
    throw error;
  } finally {
    client.release(broken);
  }
}
