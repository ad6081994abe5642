// Keeps event_definitions, property_definitions and event_properties current as batches are
// stored: which event names, event properties (with the event that carried them), person
// properties ($set, $set_once) and group properties ($group_set, by group type index) a project
// has seen, with each property's type inferred from its first value (property-types.ts).
//
// Cost: the names a batch carries are checked against an in-process memory of what was written
// recently (up to REMEMBER_MAX names, each for refreshMs; one map lookup per property of an
// event, nothing built per property); only the rest go to Postgres, in ONE
// statement per batch (three INSERT ... ON CONFLICT in one round trip), and none when nothing is
// new, which is the steady state. Re-writing a name after refreshMs moves its last_seen_at on.
// Rows are sorted, so two workers upserting overlapping names lock them in the same order; within
// one worker, batches are tracked one at a time.
//
// Never in the way of events: it runs after the batch is committed, a failure is logged and
// the keys are not remembered, so the next batch carrying them tries again. Names longer than
// MAX_NAME_LENGTH or holding a NUL are not recorded; an event's first MAX_KEYS_PER_EVENT
// properties are.
import type pg from 'pg';
import type { Logger } from '@sett/logger';
import type { GroupTypeMapping } from '../groups/group-rules';
import type { TeamEvent } from '../pipeline/types';
import { inferPropertyType, type PropertyType } from './property-types';

export const MAX_NAME_LENGTH = 400;
const MAX_KEYS_PER_EVENT = 1000;
const REMEMBER_MAX = 200_000;

// Written by the pipeline for its own use, or PostHog's hidden ones: not listed as properties.
const HIDDEN = new Set([
  '$set',
  '$set_once',
  '$unset',
  '$groups',
  '$group_type',
  '$group_key',
  '$group_set',
  '$group_0',
  '$group_1',
  '$group_2',
  '$group_3',
  '$group_4',
  'distinct_id',
]);

export const PROPERTY_KIND = { event: 1, person: 2, group: 3 } as const;

export interface DefinitionTracker {
  /** Records what the stored events carry; resolves once it is in Postgres (or nothing was new). */
  track(events: readonly TeamEvent[], groupTypes: ReadonlyMap<number, GroupTypeMapping>): Promise<void>;
}

export interface DefinitionTrackerOptions {
  pool: pg.Pool;
  logger: Logger;
  /** How long a written name is not written again (its last_seen_at resolution). */
  refreshMs?: number;
  rememberMax?: number;
  now?: () => number;
  /** Names written (new or refreshed), by table. */
  onWritten?: (counts: { events: number; properties: number; eventProperties: number }) => void;
}

type PropertyRow = {
  teamId: number;
  kind: number;
  groupTypeIndex: number;
  name: string;
  type: PropertyType | null;
};

const UPSERT_SQL = `
WITH events_in AS (
  INSERT INTO event_definitions (team_id, name, last_seen_at)
  SELECT t, n, now() FROM unnest($1::int[], $2::text[]) AS x(t, n)
  ON CONFLICT (team_id, name) DO UPDATE SET last_seen_at = excluded.last_seen_at
    WHERE event_definitions.last_seen_at IS NULL OR event_definitions.last_seen_at < excluded.last_seen_at
  RETURNING 1
), properties_in AS (
  INSERT INTO property_definitions (team_id, type, group_type_index, name, property_type, is_numerical)
  SELECT t, k, g, n, p, coalesce(p = 'Numeric', false)
    FROM unnest($3::int[], $4::smallint[], $5::smallint[], $6::text[], $7::text[]) AS x(t, k, g, n, p)
  ON CONFLICT (team_id, type, group_type_index, name) DO UPDATE
    SET property_type = excluded.property_type, is_numerical = excluded.is_numerical
    WHERE property_definitions.property_type IS NULL AND excluded.property_type IS NOT NULL
  RETURNING 1
), event_properties_in AS (
  INSERT INTO event_properties (team_id, event, property)
  SELECT t, e, p FROM unnest($8::int[], $9::text[], $10::text[]) AS x(t, e, p)
  ON CONFLICT DO NOTHING
  RETURNING 1
)
SELECT (SELECT count(*) FROM events_in)::int AS events,
       (SELECT count(*) FROM properties_in)::int AS properties,
       (SELECT count(*) FROM event_properties_in)::int AS event_properties`;

const recordable = (name: string) =>
  name.length > 0 && name.length <= MAX_NAME_LENGTH && !name.includes('\u0000');

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

const byText = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/**
 * What was written, and when: by project, then by scope (an event name for its event properties,
 * `person`, or `group:<index>`), then by name. Nested maps keep the per-event check to one map
 * lookup per property, with no key built. Over `max` names it starts again from empty (a burst
 * of upserts of names already stored, which change nothing).
 */
class Memory {
  private readonly teams = new Map<number, Map<string, Map<string, number>>>();
  private size = 0;
  constructor(
    private readonly max: number,
    private readonly refreshMs: number,
  ) {}
  scope(teamId: number, scope: string): Map<string, number> {
    let team = this.teams.get(teamId);
    if (!team) this.teams.set(teamId, (team = new Map()));
    let names = team.get(scope);
    if (!names) team.set(scope, (names = new Map()));
    return names;
  }
  isFresh(names: Map<string, number>, name: string, t: number): boolean {
    const at = names.get(name);
    return at !== undefined && t - at < this.refreshMs;
  }
  remember(teamId: number, scope: string, name: string, t: number) {
    const names = this.scope(teamId, scope);
    if (!names.has(name)) this.size++;
    names.set(name, t);
    if (this.size > this.max) {
      this.teams.clear();
      this.size = 0;
    }
  }
}

// Scopes of the memory: event names live under EVENTS, an event's properties under its name
// prefixed so no event name collides with the other scopes.
const EVENTS = 'events';
const eventScope = (event: string) => `event:${event}`;
const PERSON = 'person';
const groupScope = (index: number) => `group:${index}`;

export function createDefinitionTracker(opts: DefinitionTrackerOptions): DefinitionTracker {
  const refreshMs = opts.refreshMs ?? 3_600_000;
  const now = opts.now ?? Date.now;
  const memory = new Memory(opts.rememberMax ?? REMEMBER_MAX, refreshMs);

  // One batch's check and upsert at a time: the batch lanes start with the same new names, and a
  // lane that waits for the other's upsert then finds them remembered and writes nothing (instead
  // of upserting the same rows at once and waiting on their locks anyway).
  let previous: Promise<void> = Promise.resolve();

  return {
    track(events, groupTypes) {
      const run = previous.then(() => trackNow(events, groupTypes));
      previous = run.catch(() => undefined);
      return run;
    },
  };

  async function trackNow(
    events: readonly TeamEvent[],
    groupTypes: ReadonlyMap<number, GroupTypeMapping>,
  ): Promise<void> {
    const t = now();
    // What this batch writes, deduplicated (keys hold NULs, which no recorded name contains).
    const eventNames = new Map<string, [number, string]>();
    const properties = new Map<string, PropertyRow>();
    const eventProperties = new Map<string, [number, string, string]>();

    const addProperty = (
      teamId: number,
      kind: number,
      groupTypeIndex: number,
      name: string,
      value: unknown,
    ) => {
      const key = `${teamId}\u0000${kind}\u0000${groupTypeIndex}\u0000${name}`;
      const known = properties.get(key);
      if (!known)
        properties.set(key, { teamId, kind, groupTypeIndex, name, type: inferPropertyType(name, value) });
      else if (known.type === null) known.type = inferPropertyType(name, value);
    };

    const addOwnerProperties = (
      teamId: number,
      kind: number,
      groupTypeIndex: number,
      values: Record<string, unknown>,
    ) => {
      const names = memory.scope(teamId, kind === PROPERTY_KIND.person ? PERSON : groupScope(groupTypeIndex));
      let seen = 0;
      for (const name in values) {
        if (++seen > MAX_KEYS_PER_EVENT) break;
        if (memory.isFresh(names, name, t) || HIDDEN.has(name) || !recordable(name)) continue;
        addProperty(teamId, kind, groupTypeIndex, name, values[name]);
      }
    };

    for (const e of events) {
      if (!recordable(e.event)) continue;
      if (!memory.isFresh(memory.scope(e.teamId, EVENTS), e.event, t))
        eventNames.set(`${e.teamId}\u0000${e.event}`, [e.teamId, e.event]);
      // An event property is remembered with its event: fresh there means its definition and
      // its pair with the event are both stored.
      const seenOnEvent = memory.scope(e.teamId, eventScope(e.event));
      let seen = 0;
      for (const name in e.properties) {
        if (++seen > MAX_KEYS_PER_EVENT) break;
        if (memory.isFresh(seenOnEvent, name, t) || HIDDEN.has(name) || !recordable(name)) continue;
        addProperty(e.teamId, PROPERTY_KIND.event, -1, name, e.properties[name]);
        eventProperties.set(`${e.teamId}\u0000${e.event}\u0000${name}`, [e.teamId, e.event, name]);
      }
      if (e.processPerson) {
        const { $set, $set_once: setOnce } = e.properties;
        if (isObject($set)) addOwnerProperties(e.teamId, PROPERTY_KIND.person, -1, $set);
        if (isObject(setOnce)) addOwnerProperties(e.teamId, PROPERTY_KIND.person, -1, setOnce);
      }
      if (e.event === '$groupidentify' && isObject(e.properties.$group_set)) {
        const type = e.properties.$group_type;
        const index = typeof type === 'string' ? groupTypes.get(e.teamId)?.get(type) : undefined;
        if (index !== undefined)
          addOwnerProperties(e.teamId, PROPERTY_KIND.group, index, e.properties.$group_set);
      }
    }
    if (eventNames.size === 0 && properties.size === 0 && eventProperties.size === 0) return;

    const names = [...eventNames.values()].sort((a, b) => a[0] - b[0] || byText(a[1], b[1]));
    const props = [...properties.values()].sort(
      (a, b) =>
        a.teamId - b.teamId ||
        a.kind - b.kind ||
        a.groupTypeIndex - b.groupTypeIndex ||
        byText(a.name, b.name),
    );
    const pairs = [...eventProperties.values()].sort(
      (a, b) => a[0] - b[0] || byText(a[1], b[1]) || byText(a[2], b[2]),
    );
    const { rows } = await opts.pool.query<{
      events: number;
      properties: number;
      event_properties: number;
    }>(UPSERT_SQL, [
      names.map((n) => n[0]),
      names.map((n) => n[1]),
      props.map((p) => p.teamId),
      props.map((p) => p.kind),
      props.map((p) => p.groupTypeIndex),
      props.map((p) => p.name),
      props.map((p) => p.type),
      pairs.map((p) => p[0]),
      pairs.map((p) => p[1]),
      pairs.map((p) => p[2]),
    ]);
    // Remembered only once stored: a failed write is tried again by the next batch.
    for (const [teamId, name] of names) memory.remember(teamId, EVENTS, name, t);
    for (const [teamId, event, name] of pairs) memory.remember(teamId, eventScope(event), name, t);
    for (const p of props)
      if (p.kind !== PROPERTY_KIND.event)
        memory.remember(
          p.teamId,
          p.kind === PROPERTY_KIND.person ? PERSON : groupScope(p.groupTypeIndex),
          p.name,
          t,
        );
    const written = rows[0];
    if (written)
      opts.onWritten?.({
        events: written.events,
        properties: written.properties,
        eventProperties: written.event_properties,
      });
  }
}
