// Reads and deletes of event and property definitions (ingestion writes them: its
// definition-tracker.ts). Lists are one page query and one count over the project's rows, both
// on the (team_id, ...) unique indexes; searches are ILIKE terms, every whitespace-separated
// term in the name, as PostHog's term search.
import type pg from 'pg';
import { NotFoundError, ValidationError } from '@sett/http';
import type { Page } from '../pagination/pagination';
import { EVENT_ORDERINGS } from './definition-schemas';

const KINDS = { event: 1, person: 2, group: 3 } as const;
export type PropertyKind = keyof typeof KINDS;

// Never listed (PostHog hides them too): the pipeline's own keys.
const HIDDEN_PROPERTIES = [
  'distinct_id',
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
];
const MAX_NAMES = 1000;

/** Builds a WHERE clause with numbered parameters. */
class Where {
  readonly params: unknown[] = [];
  private readonly parts: string[] = [];
  add(value: unknown): string {
    this.params.push(value);
    return `$${this.params.length}`;
  }
  and(sql: string) {
    this.parts.push(sql);
  }
  search(column: string, search: string | undefined) {
    for (const term of (search ?? '').split(/\s+/).filter(Boolean))
      this.and(`${column} ILIKE ${this.add(`%${term.replace(/[\\%_]/g, '\\$&')}%`)}`);
  }
  toString() {
    return this.parts.join(' AND ');
  }
}

/** A JSON list of names from a query parameter, or a 400 naming it. */
export function jsonNames(value: string | undefined, attr: string): string[] | undefined {
  if (value === undefined || value === '') return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(value);
  } catch {
    throw new ValidationError(`${attr} must be a JSON list of names.`, attr);
  }
  if (!Array.isArray(parsed) || !parsed.every((n) => typeof n === 'string'))
    throw new ValidationError(`${attr} must be a JSON list of names.`, attr);
  if (parsed.length > MAX_NAMES) throw new ValidationError(`${attr} holds at most ${MAX_NAMES} names.`, attr);
  return parsed as string[];
}

function commaNames(value: string | undefined, attr: string): string[] | undefined {
  if (value === undefined || value === '') return undefined;
  const names = value.split(',').filter(Boolean);
  if (names.length > MAX_NAMES) throw new ValidationError(`${attr} holds at most ${MAX_NAMES} names.`, attr);
  return names;
}

/** PostHog's ordering: known keys in request order, `name` last as the tiebreaker; unknown keys
 * are ignored, as PostHog ignores them (its events table sends `ordering=event`). */
function eventOrderBy(ordering: string | undefined): string {
  const keys: string[] = [];
  for (const raw of (ordering ?? '').split(',')) {
    const key = raw.trim().replace(/^-/, '');
    if (!(EVENT_ORDERINGS as readonly string[]).includes(key)) continue;
    const desc = raw.trim().startsWith('-');
    const column = key.endsWith('::date') ? `(${key.slice(0, -6)} AT TIME ZONE 'UTC')::date` : key;
    keys.push(
      column === 'name'
        ? `name ${desc ? 'DESC' : 'ASC'}`
        : `${column} ${desc ? 'DESC NULLS LAST' : 'ASC NULLS FIRST'}`,
    );
  }
  if (keys.length === 0) keys.push(`(last_seen_at AT TIME ZONE 'UTC')::date DESC NULLS LAST`);
  if (!keys.some((k) => k.startsWith('name '))) keys.push('name ASC');
  return keys.join(', ');
}

interface EventRow {
  id: string;
  name: string;
  created_at: Date;
  last_seen_at: Date | null;
  volume_30_day: number | null;
}

function eventJson(r: EventRow) {
  return {
    id: r.id,
    name: r.name,
    created_at: r.created_at.toISOString(),
    last_seen_at: r.last_seen_at?.toISOString() ?? null,
    last_updated_at: r.last_seen_at?.toISOString() ?? null,
    volume_30_day: r.volume_30_day,
    query_usage_30_day: null,
    tags: [],
    is_action: false,
    action_id: null,
    is_calculating: false,
    last_calculated_at: null,
    created_by: null,
    post_to_slack: false,
  };
}

interface PropertyRow {
  id: string;
  name: string;
  type: number;
  group_type_index: number;
  is_numerical: boolean;
  property_type: string | null;
  seen: boolean | null;
}

function propertyJson(r: PropertyRow) {
  return {
    id: r.id,
    name: r.name,
    type: r.type,
    group_type_index: r.group_type_index < 0 ? null : r.group_type_index,
    is_numerical: r.is_numerical,
    property_type: r.property_type,
    tags: [],
    is_seen_on_filtered_events: r.seen,
  };
}

export interface EventDefinitionFilters {
  search?: string;
  ordering?: string;
  event_type?: string;
  names?: string;
  exclude_stale?: boolean;
}

export interface PropertyDefinitionFilters {
  search?: string;
  type?: PropertyKind;
  group_type_index?: number;
  event_names?: string;
  filter_by_event_names?: boolean;
  is_numerical?: boolean;
  is_feature_flag?: boolean;
  properties?: string;
  excluded_properties?: string;
  exclude_core_properties?: boolean;
}

async function page<T extends pg.QueryResultRow>(
  pool: pg.Pool,
  from: string,
  where: Where,
  select: string,
  orderBy: string,
  p: Page,
) {
  const limit = where.add(p.limit);
  const offset = where.add(p.offset);
  const [rows, count] = await Promise.all([
    pool.query<T>(
      `SELECT ${select} FROM ${from} WHERE ${where} ORDER BY ${orderBy} LIMIT ${limit} OFFSET ${offset}`,
      where.params,
    ),
    // Over the same select list, so every parameter the page uses is typed here too.
    pool.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM (SELECT ${select} FROM ${from} WHERE ${where}) AS matched`,
      where.params.slice(0, -2),
    ),
  ]);
  return { rows: rows.rows, count: count.rows[0]?.n ?? 0 };
}

export function createDefinitionStore(pool: pg.Pool) {
  return {
    async listEvents(teamId: number, filters: EventDefinitionFilters, p: Page) {
      const where = new Where();
      where.and(`team_id = ${where.add(teamId)}`);
      where.search('name', filters.search);
      if (filters.event_type === 'event_custom') where.and(`name NOT LIKE '$%'`);
      if (filters.event_type === 'event_posthog') where.and(`name LIKE '$%'`);
      const names = commaNames(filters.names, 'names');
      if (names) where.and(`name = ANY(${where.add(names)}::text[])`);
      if (filters.exclude_stale)
        where.and(`(last_seen_at IS NULL OR last_seen_at > now() - interval '30 days')`);
      const { rows, count } = await page<EventRow>(
        pool,
        'event_definitions',
        where,
        'id, name, created_at, last_seen_at, volume_30_day',
        eventOrderBy(filters.ordering),
        p,
      );
      return { count, results: rows.map(eventJson) };
    },

    async retrieveEvent(teamId: number, id: string) {
      const { rows } = await pool.query<EventRow>(
        'SELECT id, name, created_at, last_seen_at, volume_30_day FROM event_definitions WHERE team_id = $1 AND id = $2',
        [teamId, id],
      );
      if (!rows[0]) throw new NotFoundError();
      return eventJson(rows[0]);
    },

    async listProperties(teamId: number, filters: PropertyDefinitionFilters, p: Page) {
      const kind = filters.type ?? 'event';
      if (kind === 'group' && filters.group_type_index === undefined)
        throw new ValidationError('group_type_index is required with type=group.', 'group_type_index');
      const where = new Where();
      where.and(`d.team_id = ${where.add(teamId)}`);
      where.and(`d.type = ${where.add(KINDS[kind])}`);
      where.and(`d.group_type_index = ${where.add(kind === 'group' ? filters.group_type_index : -1)}`);
      const excluded = [
        ...HIDDEN_PROPERTIES,
        ...(jsonNames(filters.excluded_properties, 'excluded_properties') ?? []),
      ];
      where.and(`d.name <> ALL(${where.add(excluded)}::text[])`);
      where.search('d.name', filters.search);
      if (filters.is_numerical) where.and(`d.is_numerical AND d.name NOT IN ('distinct_id', 'timestamp')`);
      if (filters.is_feature_flag === true) where.and(`d.name LIKE '$feature/%'`);
      if (filters.is_feature_flag === false) where.and(`d.name NOT LIKE '$feature/%'`);
      if (filters.exclude_core_properties) where.and(`d.name NOT LIKE '$%'`);
      const names = commaNames(filters.properties, 'properties');
      if (names) where.and(`d.name = ANY(${where.add(names)}::text[])`);
      const events = jsonNames(filters.event_names, 'event_names');
      // Seen on one of the events: only event properties are recorded with their events.
      let seen = 'NULL::boolean';
      if (events && events.length > 0) {
        seen =
          kind === 'event'
            ? `EXISTS (SELECT 1 FROM event_properties ep WHERE ep.team_id = d.team_id AND ep.property = d.name AND ep.event = ANY(${where.add(events)}::text[]))`
            : 'false';
        if (filters.filter_by_event_names) where.and(seen);
      }
      const { rows, count } = await page<PropertyRow>(
        pool,
        'property_definitions d',
        where,
        `d.id, d.name, d.type, d.group_type_index, d.is_numerical, d.property_type, ${seen} AS seen`,
        `${seen === 'NULL::boolean' ? '' : `${seen} DESC, `}d.name ASC`,
        p,
      );
      return { count, results: rows.map(propertyJson) };
    },

    async retrieveProperty(teamId: number, id: string) {
      const { rows } = await pool.query<PropertyRow>(
        `SELECT id, name, type, group_type_index, is_numerical, property_type, NULL::boolean AS seen
           FROM property_definitions WHERE team_id = $1 AND id = $2`,
        [teamId, id],
      );
      if (!rows[0]) throw new NotFoundError();
      return propertyJson(rows[0]);
    },

    /** Removes the definition (the events stay); ingestion records it again when it is next
     * seen after its memory of it runs out (an hour at most). */
    async removeEvent(teamId: number, id: string) {
      const { rows } = await pool.query<{ name: string }>(
        'DELETE FROM event_definitions WHERE team_id = $1 AND id = $2 RETURNING name',
        [teamId, id],
      );
      if (!rows[0]) throw new NotFoundError();
      await pool.query('DELETE FROM event_properties WHERE team_id = $1 AND event = $2', [
        teamId,
        rows[0].name,
      ]);
    },

    async removeProperty(teamId: number, id: string) {
      const { rows } = await pool.query<{ name: string; type: number }>(
        'DELETE FROM property_definitions WHERE team_id = $1 AND id = $2 RETURNING name, type',
        [teamId, id],
      );
      if (!rows[0]) throw new NotFoundError();
      if (rows[0].type === KINDS.event)
        await pool.query('DELETE FROM event_properties WHERE team_id = $1 AND property = $2', [
          teamId,
          rows[0].name,
        ]);
    },
  };
}

export type DefinitionStore = ReturnType<typeof createDefinitionStore>;
