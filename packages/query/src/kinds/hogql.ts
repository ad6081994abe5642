// HogQLQuery: SQL over the project's events, persons and groups, in PostHog's HogQL. The text is
// parsed by PostHog's own parser (hogql/parse.ts, off the event loop) and compiled to one
// parameterised, project-scoped Postgres statement (hogql/compile.ts); docs/hogql.md lists the
// subset and where it differs from PostHog's. The answer is PostHog's: `columns`, `types` (each
// a [name, type] pair), `results` (one array per row), `hasMore`, `limit`, `offset` and `hogql`,
// the query as normalised with the limit it ran with.
//
// Cost: whatever the query asks, within the query limits every kind runs under (one read-only
// transaction, the request's deadline, the concurrency slots); the answer holds at most 50,000
// rows (LIMIT defaults to 100).
import type { PlanBase, QueryKind, QueryTeam } from '../engine';
import { HogQLCompiler, typeName, type HogQLFilters, type OutputColumn } from '../hogql/compile';
import { MAX_HOGQL_LENGTH, sharedHogQLParser } from '../hogql/parse';
import { keepUsedParams, refusedByDatabase, valueReader } from '../hogql/statement';

const PROPERTIES_SCHEMA = { type: ['array', 'object', 'null'] } as const;

export const hogqlQuerySchema = {
  type: 'object',
  required: ['kind', 'query'],
  additionalProperties: false,
  properties: {
    kind: { const: 'HogQLQuery' },
    query: { type: 'string', minLength: 1, maxLength: MAX_HOGQL_LENGTH },
    filters: {
      type: ['object', 'null'],
      additionalProperties: false,
      properties: {
        properties: PROPERTIES_SCHEMA,
        dateRange: {
          type: ['object', 'null'],
          additionalProperties: false,
          properties: {
            date_from: { type: ['string', 'null'], maxLength: 40 },
            date_to: { type: ['string', 'null'], maxLength: 40 },
            explicitDate: { type: ['boolean', 'null'] },
          },
        },
        filterTestAccounts: { type: ['boolean', 'null'] },
      },
    },
    values: {
      type: ['object', 'null'],
      maxProperties: 100,
      additionalProperties: { type: ['string', 'number', 'boolean', 'null'], maxLength: 10_000 },
      description: 'Values of {name} placeholders in the query',
    },
    variables: {
      type: ['object', 'null'],
      maxProperties: 0,
      description: 'HogQL variables (insight variables) are not served: only {} is accepted',
    },
    modifiers: { type: ['object', 'null'], maxProperties: 0 },
    explain: { type: ['boolean', 'null'], enum: [false, null], description: 'EXPLAIN is not served' },
    name: { type: ['string', 'null'], maxLength: 400 },
    response: { type: ['object', 'null'] },
    tags: { type: ['object', 'null'] },
    version: { type: ['number', 'null'] },
  },
} as const;

export interface HogQLQuery {
  kind: 'HogQLQuery';
  query: string;
  filters?: HogQLFilters | null;
  values?: Record<string, unknown> | null;
}

export interface HogQLPlan extends PlanBase {
  sql: string;
  params: unknown[];
  hogql: string;
  columns: OutputColumn[];
  limit: number;
  offset: number;
  timeZone: string;
}

/** How a column's values leave Postgres for the answer: dates as text, the rest as is. */
function outputSql(c: OutputColumn): string {
  const v = `q.${c.sql}`;
  switch (c.type.kind) {
    case 'Date':
      return `to_char(${v}, 'YYYY-MM-DD')`;
    case 'Int':
    case 'Float':
    case 'Bool':
    case 'String':
    case 'DateTime':
    case 'Null':
      return v;
    case 'Array':
      return c.type.of?.kind === 'Date' || c.type.of?.kind === 'DateTime' ? `to_jsonb(${v})` : v;
    default:
      return `(${v})::text`;
  }
}

export async function planHogQL(query: HogQLQuery, team: QueryTeam, now: Date): Promise<HogQLPlan> {
  const attr = 'query.query';
  const ast = await sharedHogQLParser().parse(query.query, 'select', attr, String(team.id));
  const compiler = new HogQLCompiler({
    teamId: team.id,
    timeZone: team.timeZone,
    now,
    text: query.query,
    attr,
    values: query.values ?? undefined,
    filters: query.filters ?? undefined,
    testAccountFilters: team.testAccountFilters,
  });
  const top = compiler.compileTop(ast);
  const { sql, params } = keepUsedParams(
    `SELECT ${top.columns.map((c) => `${outputSql(c)} AS ${c.sql}`).join(', ')} FROM (${top.sql}) AS q`,
    compiler.params,
  );
  return {
    sql,
    params,
    hogql: top.hogql,
    columns: top.columns,
    limit: top.limit,
    offset: top.offset,
    timeZone: team.timeZone,
    groups: compiler.groups,
    patterns: compiler.patterns,
  };
}

export const hogqlKind: QueryKind<HogQLQuery, HogQLPlan> = {
  kind: 'HogQLQuery',
  schema: hogqlQuerySchema,
  plan: (query, team, now) => planHogQL(query, team, now),
  async execute(db, _team, plan) {
    let rows: Array<Record<string, unknown>>;
    try {
      ({ rows } = await db.query<Record<string, unknown>>(plan.sql, plan.params));
    } catch (err) {
      throw refusedByDatabase(err) ?? err;
    }
    const page = rows.slice(0, plan.limit);
    const readers = plan.columns.map((c) => valueReader(c.type, plan.timeZone));
    return {
      columns: plan.columns.map((c) => c.name),
      types: plan.columns.map((c) => [c.name, typeName(c.type, plan.timeZone)]),
      results: page.map((r) => plan.columns.map((c, i) => readers[i]!(r[c.sql]))),
      hasMore: rows.length > plan.limit,
      limit: plan.limit,
      offset: plan.offset,
      hogql: plan.hogql,
    };
  },
};
