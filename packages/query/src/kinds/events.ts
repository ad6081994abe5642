// EventsQuery: the rows of the events table PostHog's activity view and data tables ask for,
// as `columns`, `types` and `results` (one array per row). Each `select` entry is a column of the
// answer named as written (a trailing `-- label` is kept in the name and ignored), and is a
// HogQL expression compiled by the same compiler as HogQLQuery (hogql/compile.ts), so that a
// column means the same in both; two entries are EventsQuery's own: `*` (the event as an object)
// and `person` (the person as an object, or null). With an aggregate selected, the rows group by
// the other columns. `where` entries are HogQL conditions, all of which must hold; `orderBy`
// entries HogQL orders (default newest first). Filters: `event`, `personId` (the person's uuid),
// `properties` and `fixedProperties`, `after` (default -24h; `all` for no bound) and `before`;
// `limit` (at most 1,000, default 100) and `offset`. `hasMore` says whether a next page exists
// (one row more is read than asked). Timestamps are answered in UTC, as before HogQL was served.
//
// Cost: one statement, an index range scan of (team_id, timestamp) or (team_id, event,
// timestamp) over the time bounds, joined to the person tables only when a person column, a
// person filter or personId needs them.
import { ValidationError } from '@sett/http';
import type { PlanBase, QueryKind, QueryTeam } from '../engine';
import { HogQLCompiler, typeName } from '../hogql/compile';
import { sharedHogQLParser } from '../hogql/parse';
import { keepUsedParams, refusedByDatabase, valueReader } from '../hogql/statement';
import { nodeFilters, propertyFilterSql } from '../property-filters';
import { instantOf, localOf, localText, parseDate, type Local } from '../time-range';

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
      maxItems: MAX_COLUMNS,
      items: { type: 'string', minLength: 1, maxLength: 2000 },
      description: 'HogQL conditions, all of which must hold',
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

/** A column of the answer: its name as written, its PostHog type, how a row value is read. */
interface Column {
  name: string;
  type: string;
  read: (value: unknown) => unknown;
}

export interface EventsPlan extends PlanBase {
  sql: string;
  params: unknown[];
  columns: Column[];
  limit: number;
  offset: number;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
/** A select entry's trailing `-- label` (kept in the column's name, not compiled). */
const LABEL = /\s--.*$/;

export async function planEvents(query: EventsQuery, team: QueryTeam, nowDate: Date): Promise<EventsPlan> {
  const timeZone = team.timeZone;
  const parser = sharedHogQLParser();
  const parse = (text: string, rule: 'expr' | 'order', attr: string) =>
    parser.parse(text, rule, attr, String(team.id)).then((ast) => ({ ast, text, attr }));
  const select = await Promise.all(
    query.select.map(async (entry, i) => {
      const expr = entry.replace(LABEL, '').trim();
      const attr = `query.select.${i}`;
      if (expr === '*' || expr === 'person') return { special: expr as '*' | 'person', text: expr, attr };
      return parse(expr, 'expr', attr);
    }),
  );
  const where = await Promise.all((query.where ?? []).map((w, i) => parse(w, 'expr', `query.where.${i}`)));
  const orderBy = await Promise.all(
    (query.orderBy ?? []).map((o, i) => parse(o, 'order', `query.orderBy.${i}`)),
  );

  const compiler = new HogQLCompiler({ teamId: team.id, timeZone, now: nowDate, text: '', attr: 'query' });
  const bind = (value: unknown, cast?: string) => compiler.bind(value, cast);
  const now: Local = localOf(nowDate, timeZone);
  if (query.personId && !UUID.test(query.personId))
    throw new ValidationError("query.personId must be a person's uuid.", 'query.personId');
  const groups = [
    nodeFilters(query.properties, 'query.properties'),
    nodeFilters(query.fixedProperties, 'query.fixedProperties'),
  ];

  const compiled = compiler.eventsQuery({
    select,
    where,
    orderBy,
    conditions: (ev) => {
      const out: string[] = [];
      const after = query.after ?? '-24h';
      if (after !== 'all') {
        const at = instantOf(after, 'query.after');
        out.push(
          at
            ? `${ev.sql}.timestamp >= ${bind(at, 'timestamptz')}`
            : `${ev.sql}.timestamp >= (${bind(localText(parseDate(after, now, 'query.after', false)), 'timestamp')} AT TIME ZONE ${bind(timeZone, 'text')})`,
        );
      }
      if (query.before) {
        const at = instantOf(query.before, 'query.before');
        out.push(
          at
            ? `${ev.sql}.timestamp < ${bind(at, 'timestamptz')}`
            : `${ev.sql}.timestamp < ((${bind(localText(parseDate(query.before, now, 'query.before', true)), 'timestamp')} + interval '1 second') AT TIME ZONE ${bind(timeZone, 'text')})`,
        );
      }
      if (query.event) out.push(`${ev.sql}.event = ${bind(query.event, 'text')}`);
      if (query.personId) {
        ev.usePerson();
        out.push(`${ev.sql}.person_uuid = ${bind(query.personId.toLowerCase(), 'uuid')}`);
      }
      const sources = {
        event: `${ev.sql}.properties`,
        person: `COALESCE(${ev.sql}.person_properties, '{}'::jsonb)`,
      };
      for (const g of groups)
        if (g) {
          out.push(propertyFilterSql(g, sources, (v) => bind(v), nowDate));
          if (JSON.stringify(g).includes('"type":"person"')) ev.usePerson();
        }
      return out;
    },
  });

  const limit = query.limit ?? DEFAULT_LIMIT;
  const offset = query.offset ?? 0;
  // Dates leave Postgres as text: the driver would read a date at midnight of this process's zone.
  const outputs = compiled.columns.map((c, i) =>
    c.type.kind === 'Date' ? `to_char(q.c${i}, 'YYYY-MM-DD') AS c${i}` : `q.c${i}`,
  );
  const statement = keepUsedParams(
    `SELECT ${outputs.join(', ')} FROM (${compiled.sql} LIMIT ${bind(limit + 1, 'bigint')} OFFSET ${bind(offset, 'bigint')}) AS q`,
    compiler.params,
  );
  const columns: Column[] = compiled.columns.map((c, i) => ({
    name: query.select[i]!,
    type:
      query.select[i]!.replace(LABEL, '').trim() === '*'
        ? 'Tuple(UUID, String, String, DateTime64(6), Int64, String, String, DateTime64(6))'
        : query.select[i]!.replace(LABEL, '').trim() === 'person'
          ? 'Tuple(UUID, DateTime64(6), String, String)'
          : typeName(c.type, 'UTC'),
    // Timestamps in UTC, as EventsQuery answered before it was compiled as HogQL.
    read: valueReader(c.type, 'UTC', true),
  }));
  return {
    ...statement,
    columns,
    limit,
    offset,
    groups: [...groups, ...compiler.groups],
    patterns: compiler.patterns,
  };
}

export const eventsKind: QueryKind<EventsQuery, EventsPlan> = {
  kind: 'EventsQuery',
  schema: eventsQuerySchema,
  plan: (query, team, now) => planEvents(query, team, now),
  async execute(db, _team, plan) {
    let rows: Array<Record<string, unknown>>;
    try {
      ({ rows } = await db.query<Record<string, unknown>>(plan.sql, plan.params));
    } catch (err) {
      throw refusedByDatabase(err, 'query') ?? err;
    }
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
