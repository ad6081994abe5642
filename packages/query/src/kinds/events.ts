// EventsQuery: the rows of the events table PostHog's activity view and data tables ask for,
// as `columns`, `types` and `results` (one array per row). What `select` takes, each a column
// of the answer named as written (a trailing `-- label` is kept in the name and ignored):
// - `*` (the event as an object), `event`, `timestamp`, `distinct_id`, `uuid`, `person` (the
//   person as an object, or null);
// - `properties.<key>` and `person.properties.<key>` (the value as text; a key may be written in
//   backticks);
// - `coalesce(a, b, …)` of those columns;
// - the aggregates `count()`, `count(DISTINCT person_id)`, `min(timestamp)` and
//   `max(timestamp)`; with any of them, the rows group by the other selected columns.
// Anything else, `where` clauses (HogQL expressions) and HogQLQuery are a 400 naming them:
// PostHog parses them with HogQL, which Sett does not serve here.
// Filters: `event`, `personId` (the person's uuid), `properties` and `fixedProperties`, `after`
// (default -24h; `all` for no bound) and `before`; `orderBy` on selected columns; `limit` (at
// most 1,000, default 100) and `offset`. `hasMore` says whether a next page exists (one row more
// is read than asked).
//
// Cost: one statement, an index range scan of (team_id, timestamp) or (team_id, event,
// timestamp) over the time bounds, joined to the person tables only when a person column, a
// person filter or personId needs them.
import { ValidationError } from '@sett/http';
import type { PlanBase, QueryKind, QueryTeam } from '../engine';
import { nodeFilters, propertyFilterSql } from '../property-filters';
import { localOf, localText, parseDate, type Local } from '../time-range';

const PROPERTIES_SCHEMA = { type: ['array', 'object'] } as const;
const MAX_LIMIT = 1000;
const DEFAULT_LIMIT = 100;
const MAX_COLUMNS = 50;

export const eventsQuerySchema = {
  type: 'object',
  required: ['kind', 'select'],
  additionalProperties: false,
  properties: {
    kind: { const: 'EventsQuery' },
    select: {
      type: 'array',
      minItems: 1,
      maxItems: MAX_COLUMNS,
      items: { type: 'string', minLength: 1, maxLength: 500 },
    },
    where: {
      type: 'array',
      maxItems: 0,
      description: 'HogQL expressions: not served (an empty list is accepted)',
    },
    properties: PROPERTIES_SCHEMA,
    fixedProperties: PROPERTIES_SCHEMA,
    event: { type: ['string', 'null'], maxLength: 400 },
    personId: { type: ['string', 'null'], maxLength: 100 },
    after: { type: ['string', 'null'], maxLength: 40 },
    before: { type: ['string', 'null'], maxLength: 40 },
    orderBy: { type: 'array', maxItems: MAX_COLUMNS, items: { type: 'string', maxLength: 520 } },
    limit: { type: 'integer', minimum: 1, maximum: MAX_LIMIT },
    offset: { type: 'integer', minimum: 0, maximum: 1_000_000 },
    filterTestAccounts: { type: 'boolean' },
    response: { type: 'object' },
    modifiers: { type: 'object', maxProperties: 0 },
    tags: { type: 'object' },
    version: { type: 'number' },
  },
} as const;

export interface EventsQuery {
  kind: 'EventsQuery';
  select: string[];
  where?: string[];
  properties?: unknown;
  fixedProperties?: unknown;
  event?: string | null;
  personId?: string | null;
  after?: string | null;
  before?: string | null;
  orderBy?: string[];
  filterTestAccounts?: boolean;
  limit?: number;
  offset?: number;
}

/** A column of the answer: its SQL, its PostHog type, whether it aggregates, how a row value is read. */
interface Column {
  name: string;
  sql: string;
  type: string;
  aggregate: boolean;
  person: boolean;
  read: (value: unknown) => unknown;
}

const DATETIME = "DateTime64(6, 'UTC')";
const PERSON_JOIN = `LEFT JOIN person_distinct_ids pdi ON pdi.team_id = e.team_id AND pdi.distinct_id = e.distinct_id
    LEFT JOIN persons p ON p.id = pdi.person_id`;
const PERSON_OF_EVENT = `coalesce(p.uuid::text, 'd:' || e.distinct_id)`;
const iso = (v: unknown) => (v instanceof Date ? v.toISOString() : v);

/** A property key as written after `properties.`: plain, or in backticks. */
function propertyKey(rest: string): string | undefined {
  const quoted = /^`([^`]+)`$/.exec(rest);
  if (quoted) return quoted[1];
  return /^[^\s`'"(),]+$/.test(rest) ? rest : undefined;
}

/** The SQL of one scalar column expression, or undefined when it is not in the subset. */
function scalar(expr: string, bind: (v: unknown) => string): Omit<Column, 'name' | 'aggregate'> | undefined {
  const e = expr.trim();
  switch (e) {
    case '*':
      return {
        sql: `json_build_object('uuid', e.uuid, 'event', e.event, 'properties', e.properties, 'timestamp', e.timestamp, 'team_id', e.team_id, 'distinct_id', e.distinct_id, 'elements_chain', '', 'created_at', e.created_at)`,
        type: 'Tuple(UUID, String, String, DateTime64(6), Int64, String, String, DateTime64(6))',
        person: false,
        read: (v) => v,
      };
    case 'event':
    case 'distinct_id':
      return { sql: `e.${e}`, type: 'String', person: false, read: (v) => v };
    case 'uuid':
      return { sql: 'e.uuid', type: 'UUID', person: false, read: (v) => v };
    case 'timestamp':
      return { sql: 'e.timestamp', type: DATETIME, person: false, read: iso };
    case 'person':
      return {
        sql: `CASE WHEN p.id IS NULL THEN NULL ELSE json_build_object('uuid', p.uuid, 'created_at', p.created_at, 'properties', p.properties, 'distinct_id', e.distinct_id) END`,
        type: 'Tuple(UUID, DateTime64(6), String, String)',
        person: true,
        read: (v) => v,
      };
  }
  if (e.startsWith('person.properties.')) {
    const key = propertyKey(e.slice('person.properties.'.length));
    if (key === undefined) return undefined;
    return { sql: `(p.properties ->> ${bind(key)})`, type: 'Nullable(String)', person: true, read: (v) => v };
  }
  if (e.startsWith('properties.')) {
    const key = propertyKey(e.slice('properties.'.length));
    if (key === undefined) return undefined;
    return {
      sql: `(e.properties ->> ${bind(key)})`,
      type: 'Nullable(String)',
      person: false,
      read: (v) => v,
    };
  }
  const coalesce = /^coalesce\((.+)\)$/i.exec(e);
  if (coalesce) {
    const args = coalesce[1]!.split(',').map((a) => scalar(a, bind));
    if (args.length < 2 || args.some((a) => a === undefined || a.type !== 'Nullable(String)'))
      return undefined;
    return {
      sql: `coalesce(${args.map((a) => a!.sql).join(', ')})`,
      type: 'Nullable(String)',
      person: args.some((a) => a!.person),
      read: (v) => v,
    };
  }
  return undefined;
}

/** One `select` entry as a column; 400 naming it when it is not in the subset. */
function column(entry: string, index: number, bind: (v: unknown) => string): Column {
  const expr = entry.replace(/\s--.*$/, '').trim();
  const aggregates: Record<string, Omit<Column, 'name'>> = {
    'count()': { sql: 'count(*)', type: 'UInt64', aggregate: true, person: false, read: Number },
    'count(distinct person_id)': {
      sql: `count(DISTINCT ${PERSON_OF_EVENT})`,
      type: 'UInt64',
      aggregate: true,
      person: true,
      read: Number,
    },
    'min(timestamp)': { sql: 'min(e.timestamp)', type: DATETIME, aggregate: true, person: false, read: iso },
    'max(timestamp)': { sql: 'max(e.timestamp)', type: DATETIME, aggregate: true, person: false, read: iso },
  };
  const aggregate = aggregates[expr.toLowerCase().replace(/\s+/g, ' ')];
  if (aggregate) return { name: entry, ...aggregate };
  const s = scalar(expr, bind);
  if (!s)
    throw new ValidationError(
      `query.select.${index}: ${JSON.stringify(entry.slice(0, 100))} is not served. Columns are *, event, timestamp, distinct_id, uuid, person, properties.<key>, person.properties.<key>, coalesce(...) of property columns, count(), count(DISTINCT person_id), min(timestamp) and max(timestamp); other HogQL is not served.`,
      `query.select.${index}`,
    );
  return { name: entry, ...s, aggregate: false };
}

export interface EventsPlan extends PlanBase {
  sql: string;
  params: unknown[];
  columns: Column[];
  limit: number;
  offset: number;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export function planEvents(query: EventsQuery, team: QueryTeam, nowDate: Date): EventsPlan {
  const timeZone = team.timeZone;
  const params: unknown[] = [];
  const bind = (value: unknown) => `$${params.push(value)}`;
  const teamParam = bind(null); // $1, filled at run time
  const columns = query.select.map((entry, i) => column(entry, i, bind));
  const grouped = columns.some((c) => c.aggregate);

  const conditions = [`e.team_id = ${teamParam}`];
  const now: Local = localOf(nowDate, timeZone);
  // Bound only when used: Postgres refuses a statement with a parameter it cannot type.
  let zoneParam: string | undefined;
  const zone = () => (zoneParam ??= bind(timeZone));
  // A bound with its own offset (2026-11-01T12:00:00Z) is an instant; otherwise a wall-clock
  // time or a relative date in the project's zone, as PostHog reads them.
  const instant = (value: string, attr: string): string | undefined => {
    if (!/^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d{1,6})?)?(Z|[+-]\d{2}:?\d{2})$/.test(value))
      return undefined;
    const ms = Date.parse(value);
    if (
      Number.isNaN(ms) ||
      ms < Date.parse('0001-01-01T00:00:00Z') ||
      ms > Date.parse('9999-12-31T23:59:59Z')
    )
      throw new ValidationError(`${attr} is not a date in the years 0001 to 9999: ${value}`, attr);
    return new Date(ms).toISOString();
  };
  const after = query.after ?? '-24h';
  if (after !== 'all') {
    const at = instant(after, 'query.after');
    conditions.push(
      at
        ? `e.timestamp >= ${bind(at)}::timestamptz`
        : `e.timestamp >= (${bind(localText(parseDate(after, now, 'query.after', false)))}::timestamp AT TIME ZONE ${zone()})`,
    );
  }
  if (query.before) {
    const at = instant(query.before, 'query.before');
    conditions.push(
      at
        ? `e.timestamp < ${bind(at)}::timestamptz`
        : `e.timestamp < ((${bind(localText(parseDate(query.before, now, 'query.before', true)))}::timestamp + interval '1 second') AT TIME ZONE ${zone()})`,
    );
  }
  if (query.event) conditions.push(`e.event = ${bind(query.event)}`);
  let needsPerson = columns.some((c) => c.person);
  if (query.personId) {
    if (!UUID.test(query.personId))
      throw new ValidationError("query.personId must be a person's uuid.", 'query.personId');
    conditions.push(`p.uuid = ${bind(query.personId.toLowerCase())}::uuid`);
    needsPerson = true;
  }
  const groups = [
    nodeFilters(query.properties, 'query.properties'),
    nodeFilters(query.fixedProperties, 'query.fixedProperties'),
  ];
  const sources = { event: 'e.properties', person: `COALESCE(p.properties, '{}'::jsonb)` };
  for (const g of groups)
    if (g) {
      conditions.push(propertyFilterSql(g, sources, bind, nowDate));
      if (JSON.stringify(g).includes('"type":"person"')) needsPerson = true;
    }

  // ORDER BY: selected columns only, each by its position.
  const order: string[] = [];
  for (const [i, raw] of (query.orderBy ?? []).entries()) {
    const m = /^(.*?)(?:\s+(ASC|DESC))?$/i.exec(raw.trim())!;
    const at = columns.findIndex((c) => c.name === m[1] || c.name.replace(/\s--.*$/, '').trim() === m[1]);
    if (at === -1)
      throw new ValidationError(
        `query.orderBy.${i}: ${JSON.stringify(raw.slice(0, 100))} orders by a column that is not selected.`,
        `query.orderBy.${i}`,
      );
    order.push(`${at + 1} ${(m[2] ?? 'ASC').toUpperCase()}`);
  }
  if (order.length === 0) {
    const ts = columns.findIndex((c) => c.sql === 'e.timestamp');
    const count = columns.findIndex((c) => c.sql === 'count(*)');
    if (!grouped && ts === -1) order.push('e.timestamp DESC');
    else if (ts !== -1 && !grouped) order.push(`${ts + 1} DESC`);
    else if (count !== -1) order.push(`${count + 1} DESC`);
  }
  // A stable order for pages of rows with the same sort values.
  if (!grouped) order.push('e.uuid DESC');

  const limit = query.limit ?? DEFAULT_LIMIT;
  const offset = query.offset ?? 0;
  const groupBy = grouped
    ? columns
        .map((c, i) => (c.aggregate ? undefined : String(i + 1)))
        .filter((x): x is string => x !== undefined)
    : [];
  const sql = `SELECT ${columns.map((c, i) => `${c.sql} AS c${i}`).join(', ')}
    FROM events e ${needsPerson ? PERSON_JOIN : ''}
   WHERE ${conditions.join(' AND ')}
   ${groupBy.length > 0 ? `GROUP BY ${groupBy.join(', ')}` : ''}
   ORDER BY ${order.join(', ')}
   LIMIT ${bind(limit + 1)} OFFSET ${bind(offset)}`;
  return { sql, params, columns, limit, offset, groups };
}

export const eventsKind: QueryKind<EventsQuery, EventsPlan> = {
  kind: 'EventsQuery',
  schema: eventsQuerySchema,
  plan: (query, team, now) => planEvents(query, team, now),
  async execute(db, team, plan) {
    const params = [team.id, ...plan.params.slice(1)];
    const { rows } = await db.query<Record<string, unknown>>(plan.sql, params);
    const page = rows.slice(0, plan.limit);
    return {
      columns: plan.columns.map((c) => c.name),
      types: plan.columns.map((c) => c.type),
      results: page.map((r) => plan.columns.map((c, i) => c.read(r[`c${i}`]))),
      hasMore: rows.length > plan.limit,
      limit: plan.limit,
      offset: plan.offset,
    };
  },
};
