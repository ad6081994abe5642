// The person step of a batch, in two halves around the event insert, so that the persons a
// batch changes stay locked for as short a time as possible:
// 1. planPersons (before the event insert, no locks): read every person the batch names, run
//    the batch's intents in memory, and stamp each event with its person's uuid. Events the
//    insert finds stored already (an earlier delivery) are then left out (keepInsertedOnly).
// 2. writePersons (after the event insert): lock the persons the plan changes, read them again
//    and plan again (another worker may have changed them meanwhile), repeat until every
//    person the plan writes is locked (always in one ordered statement), then write the plan. Events whose person came out
//    different from the first plan are re-stamped (rare: a concurrent merge or create).
// Most events only read their person, and those persons are never locked: a concurrent merge
// may then leave an event with the merged-away person's uuid, which is what an event stored a
// moment before that merge has too (it resolves through person_distinct_ids).
import type { PoolClient } from 'pg';
import type { TeamEvent } from '../pipeline/types';
import { personKey, simulatePersonBatch, type PersonEventInput, type PersonPlan } from './person-batch';
import { personIntentOf } from './person-rules';
import {
  PersonConflictError,
  applyPersonPlan,
  loadPersons,
  lockPersons,
  personUuidFor,
} from './person-store';

/** Rounds of lock-and-replan plus plans lost to a concurrent create, before the attempt fails. */
export const MAX_PERSON_PLAN_ROUNDS = 8;

type PersonKey = { teamId: number; distinctId: string };

export type PersonWork = {
  inputs: PersonEventInput[];
  /** Index in the batch of the event behind each input. */
  indexes: number[];
  keys: PersonKey[];
  /** Person uuid per event of the batch as first planned (null: no person processing). */
  personUuids: Array<string | null>;
  plan: PersonPlan | null;
  /** Person uuid per input, from the same plan. */
  planned: string[];
  /** Some inputs were dropped after planning (stored by an earlier delivery): plan again. */
  stale: boolean;
};

export type PersonCounts = { created: number; updated: number; merges: number; refusedMerges: number };

export async function planPersons(client: PoolClient, events: TeamEvent[]): Promise<PersonWork> {
  const work: PersonWork = {
    inputs: [],
    indexes: [],
    keys: [],
    personUuids: new Array<string | null>(events.length).fill(null),
    plan: null,
    planned: [],
    stale: false,
  };
  for (let i = 0; i < events.length; i++) {
    const e = events[i] as TeamEvent;
    if (!e.processPerson) continue;
    const intent = personIntentOf(e.event, e.distinctId, e.properties);
    work.inputs.push({ teamId: e.teamId, timestamp: e.timestamp, intent });
    work.indexes.push(i);
  }
  if (work.inputs.length === 0) return work;
  work.keys = personKeysOf(work.inputs);
  const { personUuids, plan } = simulatePersonBatch(
    work.inputs,
    await loadPersons(client, work.keys),
    personUuidFor,
  );
  work.plan = plan;
  work.planned = personUuids;
  for (let k = 0; k < work.indexes.length; k++)
    work.personUuids[work.indexes[k] as number] = personUuids[k] as string;
  return work;
}

/**
 * Leaves out the events an earlier delivery stored (their person effects were committed with
 * them): only the inserted ones count. The next writePersons plans again without them.
 */
export function keepInsertedOnly(work: PersonWork, events: TeamEvent[], inserted: Set<string>): void {
  const keep: number[] = [];
  for (let k = 0; k < work.indexes.length; k++) {
    const e = events[work.indexes[k] as number] as TeamEvent;
    if (inserted.has(`${e.teamId}:${e.uuid}`)) keep.push(k);
  }
  if (keep.length === work.indexes.length) return;
  work.inputs = keep.map((k) => work.inputs[k] as PersonEventInput);
  work.indexes = keep.map((k) => work.indexes[k] as number);
  work.planned = keep.map((k) => work.planned[k] as string);
  work.keys = personKeysOf(work.inputs);
  work.stale = true;
}

export async function writePersons(
  client: PoolClient,
  events: TeamEvent[],
  work: PersonWork,
): Promise<PersonCounts> {
  if (!work.plan || work.inputs.length === 0) return { created: 0, updated: 0, merges: 0, refusedMerges: 0 };
  let plan = work.plan;
  let uuids = work.planned;
  const replan = async () => {
    ({ plan, personUuids: uuids } = simulatePersonBatch(
      work.inputs,
      await loadPersons(client, work.keys),
      personUuidFor,
    ));
  };
  if (work.stale) await replan();
  const locked = new Set<string>();
  for (let round = 1; round <= MAX_PERSON_PLAN_ROUNDS; round++) {
    const unlocked = personsChangedBy(plan).filter((id) => !locked.has(id));
    if (unlocked.length > 0) {
      // Locks are taken in one statement, in id order. When a fresh plan needs more, the ones
      // held are let go (back to the savepoint) and all are taken again in one ordered
      // statement: adding a lower id after higher ones is how two batches deadlock.
      if (locked.size === 0) await client.query('SAVEPOINT person_locks');
      else await client.query('ROLLBACK TO SAVEPOINT person_locks');
      for (const id of unlocked) locked.add(id);
      await lockPersons(client, [...locked]);
      await replan();
      continue;
    }
    const canLoseRace = plan.creates.length > 0 || plan.distinctIds.length > 0;
    if (canLoseRace) await client.query('SAVEPOINT person_plan');
    if (await applyPersonPlan(client, plan)) {
      await restampEvents(client, events, work, uuids);
      return {
        created: plan.creates.length,
        updated: plan.updates.length,
        merges: plan.mergeCount,
        refusedMerges: plan.refusedMerges,
      };
    }
    // Lost a race to a create: the locks taken so far stay, the partial writes go.
    await client.query('ROLLBACK TO SAVEPOINT person_plan');
    await replan();
  }
  throw new PersonConflictError(`persons kept changing under this batch (${MAX_PERSON_PLAN_ROUNDS} plans)`);
}

/** Every (team, distinct id) the intents name, once. */
function personKeysOf(inputs: PersonEventInput[]): PersonKey[] {
  const keys = new Map<string, PersonKey>();
  const add = (teamId: number, distinctId: string) => {
    const k = personKey(teamId, distinctId);
    if (!keys.has(k)) keys.set(k, { teamId, distinctId });
  };
  for (const { teamId, intent } of inputs) {
    if (intent.kind === 'update') add(teamId, intent.distinctId);
    else {
      add(teamId, intent.targetDistinctId);
      add(teamId, intent.sourceDistinctId);
    }
  }
  return [...keys.values()];
}

/** Stored persons the plan writes: updated, merged either way, or given a new distinct id. */
function personsChangedBy(plan: PersonPlan): string[] {
  const ids = new Set<string>();
  for (const p of plan.updates) if (p.id !== null) ids.add(p.id);
  for (const m of plan.merges) {
    ids.add(m.sourceId);
    if (m.target.id !== null) ids.add(m.target.id);
  }
  for (const d of plan.distinctIds) if (d.person.id !== null) ids.add(d.person.id);
  return [...ids];
}

/** Events inserted with the first plan's person whose person the final plan changed. */
async function restampEvents(
  client: PoolClient,
  events: TeamEvent[],
  work: PersonWork,
  final: string[],
): Promise<void> {
  const teamIds: number[] = [];
  const eventUuids: string[] = [];
  const personUuids: string[] = [];
  for (let k = 0; k < work.indexes.length; k++) {
    if (final[k] === work.planned[k]) continue;
    const e = events[work.indexes[k] as number] as TeamEvent;
    teamIds.push(e.teamId);
    eventUuids.push(e.uuid);
    personUuids.push(final[k] as string);
  }
  if (eventUuids.length === 0) return;
  // uuid = ANY(...) as well as the join: it lets the planner prune events' uuid-range partitions.
  await client.query(
    `UPDATE events e SET person_id = u.person_id
       FROM unnest($1::int[], $2::uuid[], $3::uuid[]) AS u(team_id, uuid, person_id)
      WHERE e.uuid = ANY($2::uuid[]) AND e.team_id = u.team_id AND e.uuid = u.uuid`,
    [teamIds, eventUuids, personUuids],
  );
}
