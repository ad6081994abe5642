// One batch, one Postgres transaction, in this order:
// 1. resolve group types (a new type is created on first sight, up to five per project);
// 2. plan persons from an unlocked read: the batch's intents run in order in memory, and each
//    event gets its person's uuid (persons/person-writer.ts);
// 3. insert all events with one bulk insert, which skips (and names) the events an earlier
//    delivery stored: their person and group effects were committed with them, so they are
//    left out of steps 4 and 5;
// 4. lock the persons the plan changes, plan again from a fresh read, write the plan;
// 5. upsert the $groupidentify groups, sorted by key.
// The event insert comes before any person is locked, so the locks that make concurrent
// batches wait on each other are held only for steps 4, 5 and the commit.
//
// Round trips, happy path: BEGIN, the person read (only with person processing), the event
// insert, the lock and a second read (only when the plan changes stored persons), the person
// writes (creates, distinct ids, merges: three, updates; each only when needed; a savepoint
// first when the plan creates anything), the group statements (only with $groups or
// $groupidentify), COMMIT.
import type { Pool, PoolClient } from 'pg';
import { insertEvents, type EventRow } from '../events/event-writer';
import {
  foldGroupUpserts,
  groupColumns,
  groupIdentifyOf,
  type GroupTypeMapping,
  type GroupUpsert,
} from '../groups/group-rules';
import { ensureGroupType, loadGroupTypeMappings, upsertGroups } from '../groups/group-store';
import { keepInsertedOnly, planPersons, writePersons } from '../persons/person-writer';
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

type GroupWork = {
  groupTypes: Map<number, GroupTypeMapping>;
  newGroupTypeTeams: Set<number>;
  limited: number;
  /** The group upsert of each $groupidentify event, by its index in the batch. */
  upserts: Map<number, GroupUpsert>;
};

const hasGroups = (e: TeamEvent) =>
  e.event === '$groupidentify' || (typeof e.properties.$groups === 'object' && e.properties.$groups !== null);

export async function writeBatchInTransaction(
  client: PoolClient,
  events: TeamEvent[],
): Promise<WriteBatchResult> {
  const groups = await resolveGroups(client, events);
  const personWork = await planPersons(client, events);
  const rows = eventRows(events, personWork.personUuids, groups.groupTypes);
  let inserted: number;
  let upserts: GroupUpsert[];
  if (personWork.inputs.length === 0 && groups.upserts.size === 0) {
    inserted = await insertEvents(client, rows);
    upserts = [];
  } else {
    const insertedKeys = await insertEvents(client, rows, true);
    inserted = insertedKeys.size;
    keepInsertedOnly(personWork, events, insertedKeys);
    upserts = foldGroupUpserts(
      [...groups.upserts]
        .filter(([i]) => insertedKeys.has(`${events[i]!.teamId}:${events[i]!.uuid}`))
        .map(([, u]) => u),
    );
  }
  const persons = await writePersons(client, events, personWork);
  await upsertGroups(client, upserts);
  return {
    inserted,
    alreadyStored: events.length - inserted,
    personsCreated: persons.created,
    personsUpdated: persons.updated,
    merges: persons.merges,
    refusedMerges: persons.refusedMerges,
    groupTypeLimited: groups.limited,
    groupsUpserted: upserts.length,
    groupTypes: groups.groupTypes,
    newGroupTypeTeams: groups.newGroupTypeTeams,
  };
}

/** Group types (created on first sight, up to five per project) and the $groupidentify upserts. */
async function resolveGroups(client: PoolClient, events: TeamEvent[]): Promise<GroupWork> {
  const groupTeams = [...new Set(events.filter(hasGroups).map((e) => e.teamId))];
  const outcome: GroupWork = {
    groupTypes: await loadGroupTypeMappings(client, groupTeams),
    newGroupTypeTeams: new Set<number>(),
    limited: 0,
    upserts: new Map(),
  };
  if (groupTeams.length === 0) return outcome;
  for (let i = 0; i < events.length; i++) {
    const e = events[i] as TeamEvent;
    const identify = groupIdentifyOf(e.event, e.properties);
    if (!identify) continue;
    const mapping = outcome.groupTypes.get(e.teamId) as GroupTypeMapping;
    const { index, created } = await ensureGroupType(client, e.teamId, identify.groupType, mapping);
    if (created) outcome.newGroupTypeTeams.add(e.teamId);
    if (index === null) outcome.limited++;
    else
      outcome.upserts.set(i, {
        teamId: e.teamId,
        groupTypeIndex: index,
        groupKey: identify.groupKey,
        set: identify.set,
      });
  }
  return outcome;
}

function eventRows(
  events: TeamEvent[],
  personUuids: Array<string | null>,
  groupTypes: Map<number, GroupTypeMapping>,
): EventRow[] {
  return events.map((e, i) => ({
    uuid: e.uuid,
    teamId: e.teamId,
    event: e.event,
    distinctId: e.distinctId,
    personUuid: personUuids[i] ?? null,
    propertiesJson: e.propertiesJson,
    timestamp: e.timestamp,
    groups: groupColumns(groupTypes.get(e.teamId), e.properties),
  }));
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
