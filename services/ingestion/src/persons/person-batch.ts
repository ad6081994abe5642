// Applies one batch's person intents, in order, to an in-memory copy of the persons the batch
// touches (loaded and locked by the store), and turns the outcome into a set-based write plan:
// persons to create, distinct ids to add, persons merged away (their distinct ids move to the
// survivor), and persons to update with their final properties. Pure, so the identify / alias /
// merge semantics are unit tested without a database.
import { applyPropertyUpdate, mergePersonProperties, type PersonIntent } from './person-rules';

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
  const batch = new PersonBatch(loaded, newUuid);
  const personUuids: string[] = [];
  for (const event of events) personUuids.push(batch.apply(event).uuid);
  return { personUuids, plan: batch.plan() };
}

/** The in-memory persons of one batch; each method is one rule of the simulation. */
class PersonBatch {
  private readonly byKey = new Map<string, PersonState>();
  private readonly states: PersonState[] = [];
  private mergeCount = 0;
  private refusedMerges = 0;

  constructor(
    loaded: Map<string, LoadedPerson>,
    private readonly newUuid: (teamId: number, distinctId: string) => string,
  ) {
    // Several distinct ids may name one person: one state per person.
    const byId = new Map<string, PersonState>();
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
        this.states.push(state);
      }
      this.byKey.set(key, state);
    }
  }

  /** Runs one event's intent; returns the person the event belongs to. */
  apply({ teamId, timestamp, intent }: PersonEventInput): PersonState {
    let person: PersonState;
    if (intent.kind === 'update') {
      person = this.get(teamId, intent.distinctId) ?? this.create(teamId, intent.distinctId, timestamp);
      if (intent.identify) this.markIdentified(person);
    } else {
      person = this.join(
        teamId,
        intent.targetDistinctId,
        intent.sourceDistinctId,
        intent.guardIdentified,
        timestamp,
      );
      this.markIdentified(person);
    }
    if (applyPropertyUpdate(person.properties, intent.update)) this.touch(person);
    return person;
  }

  /** $identify / $create_alias: make the source's person part of the target's. */
  private join(
    teamId: number,
    targetId: string,
    sourceId: string,
    guardIdentified: boolean,
    timestamp: string,
  ): PersonState {
    const target = this.get(teamId, targetId);
    const source = this.get(teamId, sourceId);
    if (target && !source) {
      this.addDistinctId(target, sourceId);
      return target;
    }
    if (!target && source) {
      this.addDistinctId(source, targetId);
      return source;
    }
    if (target && source) {
      if (target !== source) {
        if (guardIdentified && source.isIdentified) this.refusedMerges++;
        else this.merge(source, target);
      }
      return target;
    }
    const person = this.create(teamId, targetId, timestamp);
    this.addDistinctId(person, sourceId);
    return person;
  }

  private get(teamId: number, distinctId: string): PersonState | undefined {
    const s = this.byKey.get(personKey(teamId, distinctId));
    return s ? follow(s) : undefined;
  }

  /** A person gets one version bump per batch however often it changes (plus one per merge). */
  private touch(p: PersonState): void {
    p.changed = true;
    if (!p.bumped) {
      p.version += 1;
      p.bumped = true;
    }
  }

  private addDistinctId(p: PersonState, distinctId: string): void {
    this.byKey.set(personKey(p.teamId, distinctId), p);
    p.newDistinctIds.push(distinctId);
  }

  private create(teamId: number, distinctId: string, timestamp: string): PersonState {
    const p: PersonState = {
      id: null,
      uuid: this.newUuid(teamId, distinctId),
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
    this.states.push(p);
    this.addDistinctId(p, distinctId);
    return p;
  }

  private markIdentified(p: PersonState): void {
    if (!p.isIdentified) {
      p.isIdentified = true;
      this.touch(p);
    }
  }

  private merge(source: PersonState, target: PersonState): void {
    target.properties = mergePersonProperties(target.properties, source.properties);
    target.isIdentified = target.isIdentified || source.isIdentified;
    if (source.createdAt < target.createdAt) target.createdAt = source.createdAt;
    target.version = Math.max(target.version, source.version) + 1;
    target.bumped = true;
    target.changed = true;
    target.newDistinctIds.push(...source.newDistinctIds);
    source.newDistinctIds = [];
    source.mergedInto = target;
    this.mergeCount++;
  }

  /** What the batch must write: creates, new distinct ids, merges, updates. */
  plan(): PersonPlan {
    const plan: PersonPlan = {
      creates: [],
      distinctIds: [],
      merges: [],
      updates: [],
      mergeCount: this.mergeCount,
      refusedMerges: this.refusedMerges,
    };
    for (const s of this.states) {
      if (s.mergedInto) {
        if (s.id !== null) plan.merges.push({ sourceId: s.id, target: follow(s) });
        continue;
      }
      if (s.id === null) plan.creates.push(s);
      else if (s.changed) plan.updates.push(s);
      for (const distinctId of s.newDistinctIds)
        plan.distinctIds.push({ teamId: s.teamId, distinctId, person: s });
    }
    return plan;
  }
}
