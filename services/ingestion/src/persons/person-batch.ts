// Applies one batch's person intents, in order, to an in-memory copy of the persons the batch
// touches (loaded and locked by the store), and turns the outcome into a set-based write plan:
// persons to create, distinct ids to add, persons merged away (their distinct ids move to the
// survivor), and persons to update with their final properties. Pure, so the identify / alias /
// merge semantics are unit tested without a database.
import {
  applyPropertyUpdate,
  mergePersonProperties,
  type PersonIntent,
  type PropertyUpdate,
} from './person-rules';

export type LoadedPerson = {
  id: string;
  uuid: string;
  teamId: number;
  properties: Record<string, unknown>;
  isIdentified: boolean;
  version: number;
  /** ISO 8601 */
  createdAt: string;
};

export type PersonState = {
  /** Database id; null for a person created in this batch. */
  id: string | null;
  uuid: string;
  teamId: number;
  properties: Record<string, unknown>;
  isIdentified: boolean;
  version: number;
  createdAt: string;
  changed: boolean;
  /** Version already raised in this batch (a person gets one bump per batch, plus one per merge). */
  bumped: boolean;
  mergedInto: PersonState | null;
  /** Distinct ids that get a person_distinct_ids row for this person in this batch. */
  newDistinctIds: string[];
};

export type PersonEventInput = { teamId: number; timestamp: string; intent: PersonIntent };

export type PersonPlan = {
  creates: PersonState[];
  /** New person_distinct_ids rows; `person` is the surviving state (created or loaded). */
  distinctIds: Array<{ teamId: number; distinctId: string; person: PersonState }>;
  /** Loaded persons merged away: their distinct ids (and flag overrides) move to `target`. */
  merges: Array<{ sourceId: string; target: PersonState }>;
  updates: PersonState[];
  mergeCount: number;
  /** $identify merges refused because the anonymous person was already identified. */
  refusedMerges: number;
};

export type PersonBatchResult = {
  /** Person uuid of each input event, as of that event (later merges do not rewrite it). */
  personUuids: string[];
  plan: PersonPlan;
};

export const personKey = (teamId: number, distinctId: string) => `${teamId}\u0001${distinctId}`;

const follow = (p: PersonState): PersonState => {
  let cur = p;
  while (cur.mergedInto) cur = cur.mergedInto;
  return cur;
};

export function simulatePersonBatch(
  events: PersonEventInput[],
  loaded: Map<string, LoadedPerson>,
  newUuid: (teamId: number, distinctId: string) => string,
): PersonBatchResult {
  const byKey = new Map<string, PersonState>();
  const byId = new Map<string, PersonState>();
  const states: PersonState[] = [];
  let mergeCount = 0;
  let refusedMerges = 0;

  for (const [key, p] of loaded) {
    let state = byId.get(p.id);
    if (!state) {
      state = {
        ...p,
        properties: { ...p.properties },
        changed: false,
        bumped: false,
        mergedInto: null,
        newDistinctIds: [],
      };
      byId.set(p.id, state);
      states.push(state);
    }
    byKey.set(key, state);
  }

  const get = (teamId: number, distinctId: string): PersonState | undefined => {
    const s = byKey.get(personKey(teamId, distinctId));
    return s ? follow(s) : undefined;
  };
  const touch = (p: PersonState) => {
    p.changed = true;
    if (!p.bumped) {
      p.version += 1;
      p.bumped = true;
    }
  };
  const addDistinctId = (p: PersonState, distinctId: string) => {
    byKey.set(personKey(p.teamId, distinctId), p);
    p.newDistinctIds.push(distinctId);
  };
  const create = (teamId: number, distinctId: string, timestamp: string): PersonState => {
    const p: PersonState = {
      id: null,
      uuid: newUuid(teamId, distinctId),
      teamId,
      properties: {},
      isIdentified: false,
      version: 0,
      createdAt: timestamp,
      changed: true,
      bumped: true,
      mergedInto: null,
      newDistinctIds: [],
    };
    states.push(p);
    addDistinctId(p, distinctId);
    return p;
  };
  const markIdentified = (p: PersonState) => {
    if (!p.isIdentified) {
      p.isIdentified = true;
      touch(p);
    }
  };
  const update = (p: PersonState, u: PropertyUpdate | null) => {
    if (applyPropertyUpdate(p.properties, u)) touch(p);
  };
  const merge = (source: PersonState, target: PersonState) => {
    target.properties = mergePersonProperties(target.properties, source.properties);
    target.isIdentified = target.isIdentified || source.isIdentified;
    if (source.createdAt < target.createdAt) target.createdAt = source.createdAt;
    target.version = Math.max(target.version, source.version) + 1;
    target.bumped = true;
    target.changed = true;
    target.newDistinctIds.push(...source.newDistinctIds);
    source.newDistinctIds = [];
    source.mergedInto = target;
    mergeCount++;
  };

  const personUuids: string[] = [];
  for (const { teamId, timestamp, intent } of events) {
    let person: PersonState;
    if (intent.kind === 'update') {
      person = get(teamId, intent.distinctId) ?? create(teamId, intent.distinctId, timestamp);
      if (intent.identify) markIdentified(person);
    } else {
      const target = get(teamId, intent.targetDistinctId);
      const source = get(teamId, intent.sourceDistinctId);
      if (target && !source) {
        person = target;
        addDistinctId(target, intent.sourceDistinctId);
      } else if (!target && source) {
        person = source;
        addDistinctId(source, intent.targetDistinctId);
      } else if (target && source) {
        person = target;
        if (target !== source) {
          if (intent.guardIdentified && source.isIdentified) refusedMerges++;
          else merge(source, target);
        }
      } else {
        person = create(teamId, intent.targetDistinctId, timestamp);
        addDistinctId(person, intent.sourceDistinctId);
      }
      markIdentified(person);
    }
    update(person, intent.update);
    personUuids.push(person.uuid);
  }

  const plan: PersonPlan = {
    creates: [],
    distinctIds: [],
    merges: [],
    updates: [],
    mergeCount,
    refusedMerges,
  };
  for (const s of states) {
    if (s.mergedInto) {
      if (s.id !== null) plan.merges.push({ sourceId: s.id, target: follow(s) });
      continue;
    }
    if (s.id === null) plan.creates.push(s);
    else if (s.changed) plan.updates.push(s);
    for (const distinctId of s.newDistinctIds)
      plan.distinctIds.push({ teamId: s.teamId, distinctId, person: s });
  }
  return { personUuids, plan };
}
