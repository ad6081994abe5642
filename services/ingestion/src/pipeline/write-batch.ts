// One batch, one Postgres transaction, in this order:
// 1. skip events an earlier delivery stored (their person and group effects were committed
//    with them);
// 2. resolve group types (a new type is created on first sight, up to five per project);
// 3. plan persons from an unlocked read: the batch's intents run in order in memory, and each
//    event gets its person's uuid (persons/person-writer.ts);
// 4. insert all events with one bulk insert;
// 5. lock the persons the plan changes, plan again from a fresh read, write the plan;
// 6. upsert the $groupidentify groups, sorted by key.
// The event insert comes before any person is locked, so the locks that make concurrent
// batches wait on each other are held only for steps 5, 6 and the commit.
//
// Round trips, happy path: BEGIN, the redelivery check (only with person or group work), the
// person read, the event insert, the lock and a second read (only when the plan changes stored
// persons), the person writes (creates, distinct ids, merges: three, updates; each only when
// needed; a savepoint first when the plan creates anything), the group statements (only with
// $groups or $groupidentify), COMMIT.
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
import { planPersons, writePersons } from '../persons/person-writer';
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
  /** One per group, sorted by key. */
  upserts: GroupUpsert[];
};

const hasGroups = (e: TeamEvent) =>
  e.event === '$groupidentify' || (typeof e.properties.$groups === 'object' && e.properties.$groups !== null);

export async function writeBatchInTransaction(
  client: PoolClient,
  events: TeamEvent[],
): Promise<WriteBatchResult> {
  const todo = await skipStoredEvents(client, events);
  const groups = await resolveGroups(client, todo);
  const personWork = await planPersons(client, todo);
  const inserted = await insertEvents(client, eventRows(todo, personWork.personUuids, groups.groupTypes));
  const persons = await writePersons(client, todo, personWork);
  await upsertGroups(client, groups.upserts);
  return {
    inserted,
    alreadyStored: events.length - todo.length,
    personsCreated: persons.created,
    personsUpdated: persons.updated,
    merges: persons.merges,
    refusedMerges: persons.refusedMerges,
    groupTypeLimited: groups.limited,
    groupsUpserted: groups.upserts.length,
    groupTypes: groups.groupTypes,
    newGroupTypeTeams: groups.newGroupTypeTeams,
  };
}

/** Redelivery: only events with effects beyond their own row need the check. */
async function skipStoredEvents(client: PoolClient, events: TeamEvent[]): Promise<TeamEvent[]> {
  if (!events.some((e) => e.processPerson || e.event === '$groupidentify')) return events;
  const stored = await findStoredEvents(client, events);
  return stored.size === 0 ? events : events.filter((e) => !stored.has(`${e.teamId}:${e.uuid}`));
}

/** Group types (created on first sight, up to five per project) and the $groupidentify upserts. */
async function resolveGroups(client: PoolClient, events: TeamEvent[]): Promise<GroupWork> {
  const groupTeams = [...new Set(events.filter(hasGroups).map((e) => e.teamId))];
  const outcome: GroupWork = {
    groupTypes: await loadGroupTypeMappings(client, groupTeams),
    newGroupTypeTeams: new Set<number>(),
    limited: 0,
    upserts: [],
  };
  if (groupTeams.length === 0) return outcome;
  const upserts: GroupUpsert[] = [];
  for (const e of events) {
    const identify = groupIdentifyOf(e.event, e.properties);
    if (!identify) continue;
    const mapping = outcome.groupTypes.get(e.teamId) as GroupTypeMapping;
    const { index, created } = await ensureGroupType(client, e.teamId, identify.groupType, mapping);
    if (created) outcome.newGroupTypeTeams.add(e.teamId);
    if (index === null) outcome.limited++;
    else
      upserts.push({
        teamId: e.teamId,
        groupTypeIndex: index,
        groupKey: identify.groupKey,
        set: identify.set,
      });
  }
  outcome.upserts = foldGroupUpserts(upserts);
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
