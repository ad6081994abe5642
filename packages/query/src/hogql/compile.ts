// HogQL (PostHog's AST, parse.ts) to one parameterised Postgres statement, for a documented
// subset (docs/hogql.md). Safe by construction:
// - every table a query names is one of `events`, `persons`, `groups` or a CTE of the query,
//   and each base table compiles to a subquery filtered on the project (`team_id = $n`), so no
//   join, subquery or CTE can reach another project's rows;
// - every identifier in the SQL is generated here (s1, c0, w1, the real column names); no name
//   from the query reaches Postgres, so catalogs, other tables and `pg_*` functions are out of
//   reach, and every function is one of this file's;
// - every literal is a bind parameter;
// - anything outside the subset (an unknown table, function, setting or clause, or a field of
//   the AST this file does not read) is a 400 naming it and its position, never passed through.
// Semantics follow HogQL where Postgres differs: a property is text (null when absent), compared
// with a number or a date it is cast as PostHog casts (a value that does not cast is null, so
// no stored value can make a query fail), time functions work in the project's time zone, and
// division by zero is null rather than an error.
import { ValidationError } from '@sett/http';
import { instantOf, localOf, localText, parseDate } from '../time-range';
import {
  nodeFilters,
  propertyFilterSql,
  whenIsoDateSql,
  type PropertyGroup,
  type RequestPattern,
} from '../property-filters';
import { isNode, type Node } from './ast';
import { positionText } from './parse';

/** What an expression yields, as far as the compiler needs to know. */
export type Kind =
  | 'String'
  | 'Int'
  | 'Float'
  | 'Bool'
  | 'DateTime'
  | 'Date'
  | 'UUID'
  | 'JSON'
  | 'Null'
  | 'Array'
  | 'Interval';

export interface Type {
  kind: Kind;
  /** Null when absent (a property): shown as Nullable(...) in `types`. */
  nullable?: boolean;
  /** A DateTime's zone (toTimeZone); the project's when absent. */
  zone?: string;
  /** An array's element type. */
  of?: Type;
  /** An Int from a count: shown as UInt64. */
  count?: boolean;
}

export interface Expr {
  sql: string;
  /** The expression as normalised HogQL. */
  hogql: string;
  type: Type;
  /** Whether it contains an aggregate. */
  agg: boolean;
  /** Set for constants (after placeholders): the value. */
  constant?: { value: unknown };
}

export interface OutputColumn {
  name: string;
  type: Type;
  /** The SQL alias of the column in the statement (c0, c1, …). */
  sql: string;
}

export interface CompiledSelect {
  sql: string;
  hogql: string;
  columns: OutputColumn[];
}

export interface HogQLFilters {
  properties?: unknown;
  dateRange?: { date_from?: string | null; date_to?: string | null; explicitDate?: boolean | null };
  filterTestAccounts?: boolean;
}

export interface CompileOptions {
  teamId: number;
  timeZone: string;
  now: Date;
  /** The original text (for positions in messages). */
  text: string;
  /** The request field the text came from (query.query). */
  attr: string;
  values?: Record<string, unknown>;
  filters?: HogQLFilters;
  testAccountFilters?: unknown;
}

export interface EventsSpec {
  select: Array<{ ast?: Node; special?: '*' | 'person'; text: string; attr: string }>;
  where: Array<{ ast: Node; text: string; attr: string }>;
  orderBy: Array<{ ast: Node; text: string; attr: string }>;
  /** The kind's own conditions, over the events table's alias; `usePerson` joins the persons. */
  conditions(events: { sql: string; usePerson(): void }): string[];
}

/** The top-level answer's row limit: PostHog's default and its cap. */
export const DEFAULT_LIMIT = 100;
export const MAX_LIMIT = 50_000;
/** At most this many selects (subqueries, CTEs, set parts) in one query. */
const MAX_SELECTS = 32;
/** At most this many table references in one query. */
const MAX_TABLES = 16;

// A text that casts to a double without error: at most 200 characters and a two-digit exponent,
// so neither overflow nor underflow can happen whatever an event stored.
const NUMERIC_RE = `'^[+-]?([0-9]+(\\.[0-9]*)?|\\.[0-9]+)([eE][+-]?[0-9]{1,2})?$'`;
const INT_RE = `'^[+-]?[0-9]{1,18}$'`;
const OFFSET_RE = `'(Z|[+-][0-9]{2}(:?[0-9]{2})?)$'`;

const IDENT = /^[A-Za-z_$][A-Za-z0-9_$]*$/;
const quoteIdent = (s: string) => (IDENT.test(s) ? s : `\`${s.replace(/[`\\]/g, (c) => `\\${c}`)}\``);
const quoteString = (s: string) => `'${s.replace(/['\\]/g, (c) => `\\${c}`)}'`;

const T = (kind: Kind, extra: Partial<Type> = {}): Type => ({ kind, ...extra });
const isNumber = (t: Type) => t.kind === 'Int' || t.kind === 'Float';

/** PostHog's name of a type, as `types` shows it. */
export function typeName(t: Type, timeZone: string): string {
  const base = ((): string => {
    switch (t.kind) {
      case 'Int':
        return t.count ? 'UInt64' : 'Int64';
      case 'Float':
        return 'Float64';
      case 'DateTime':
        return `DateTime64(6, '${t.zone ?? timeZone}')`;
      case 'Array':
        return `Array(${typeName(t.of ?? T('String'), timeZone)})`;
      case 'Null':
        return 'Nullable(Nothing)';
      case 'JSON':
        return 'String';
      case 'Interval':
        return 'IntervalSecond';
      default:
        return t.kind;
    }
  })();
  return t.nullable && t.kind !== 'Null' ? `Nullable(${base})` : base;
}

// The columns each base table offers, and how its team-filtered subquery selects them.
const EVENT_COLUMNS = [
  'uuid',
  'event',
  'properties',
  'timestamp',
  'distinct_id',
  'elements_chain',
  'created_at',
];
const EVENT_STAR = [
  ...EVENT_COLUMNS,
  '$session_id',
  '$window_id',
  '$group_0',
  '$group_1',
  '$group_2',
  '$group_3',
  '$group_4',
];
const PERSON_STAR = ['id', 'created_at', 'properties', 'is_identified'];
const GROUP_STAR = ['index', 'key', 'created_at', 'properties'];

type TableName = 'events' | 'persons' | 'groups';

interface Source {
  /** The name the query refers to it by: its alias, else its table's name. */
  name: string;
  /** Its alias in the SQL. */
  sql: string;
  table: TableName | 'derived';
  /** A derived table's columns (subquery or CTE). */
  columns?: OutputColumn[];
  /** events: whether the person of each event is read (joins the person tables). */
  person: boolean;
  /** The FROM item without its alias (filled when rendered for base tables). */
  body?: string;
}

interface Cte {
  sql: string;
  columns: OutputColumn[];
}

interface Scope {
  parent?: Scope;
  sources: Source[];
  aliases: Map<string, Expr>;
  ctes: Map<string, Cte>;
  /** The alias being compiled (its own name refers to a column, not to itself). */
  compiling?: string;
}

type Clause = 'select' | 'where' | 'group' | 'having' | 'order' | 'on' | 'limit';

interface Ctx {
  scope: Scope;
  clause: Clause;
  inAgg: boolean;
}

/** Keys of AST nodes that carry no meaning for the compiler. */
const META = new Set(['node', 'start', 'end', 'type']);

// What each key of a SelectQuery is called in a message when set and not served.
const SELECT_CLAUSES: Record<string, string> = {
  prewhere: 'PREWHERE',
  qualify: 'QUALIFY',
  array_join_list: 'ARRAY JOIN',
  array_join_op: 'ARRAY JOIN',
  limit_by: 'LIMIT BY',
  limit_with_ties: 'LIMIT … WITH TIES',
  window_exprs: 'WINDOW',
  settings: 'SETTINGS',
  view_name: 'a view',
};
const SELECT_SERVED = new Set([
  'ctes',
  'distinct',
  'select',
  'select_from',
  'where',
  'group_by',
  'having',
  'order_by',
  'limit',
  'offset',
]);

export class HogQLCompiler {
  readonly params: unknown[] = [];
  /** Regular expressions of `match` and `=~`: settled with the filters' within the request's budget. */
  readonly patterns: RequestPattern[] = [];
  readonly groups: Array<PropertyGroup | undefined> = [];
  private readonly memo = new Map<string, string>();
  private selects = 0;
  private tables = 0;
  private ctes = 0;
  private readonly team: string;
  /** The text being compiled and its request field, for positions in messages. */
  private source: { text: string; attr: string };

  constructor(private readonly o: CompileOptions) {
    this.team = this.bind(o.teamId, 'int');
    this.source = { text: o.text, attr: o.attr };
  }

  // ---- errors and binding ------------------------------------------------------------------

  private refuse(node: Node | undefined, detail: string): never {
    throw new ValidationError(
      `${this.source.attr}: ${detail} (at ${positionText(this.source.text, node?.start)}).`,
      this.source.attr,
      'hogql_unsupported',
    );
  }

  /** A bind parameter with its cast; the same value and cast share one parameter, so that an
   * expression compiled twice (SELECT and GROUP BY) is the same SQL text. */
  bind(value: unknown, cast?: string): string {
    if (cast === undefined) return `$${this.params.push(value)}`;
    const key = `${cast}\u0000${typeof value}\u0000${JSON.stringify(value)}`;
    let ref = this.memo.get(key);
    if (!ref) {
      ref = `$${this.params.push(value)}::${cast}`;
      this.memo.set(key, ref);
    }
    return ref;
  }

  private zone(t?: Type): string {
    return this.bind(t?.zone ?? this.o.timeZone, 'text');
  }

  /** Refuses node fields this file does not read, naming them. */
  private onlyKeys(node: Node, served: ReadonlySet<string>, names: Record<string, string> = {}): void {
    for (const [k, v] of Object.entries(node)) {
      if (META.has(k) || served.has(k)) continue;
      if (v === null || v === undefined || v === false || (Array.isArray(v) && v.length === 0)) continue;
      this.refuse(node, `${names[k] ?? k} is not served`);
    }
  }

  // ---- selects -------------------------------------------------------------------------------

  /** The top-level query, with the answer's limit (one row more, to tell whether more exist). */
  compileTop(node: Node): CompiledSelect & { limit: number; offset: number } {
    const top = { limit: DEFAULT_LIMIT, offset: 0 };
    const compiled = this.compileQuery(node, undefined, top);
    return { ...compiled, ...top };
  }

  private compileQuery(
    node: Node,
    parent: Scope | undefined,
    top?: { limit: number; offset: number },
  ): CompiledSelect {
    if (node.node === 'SelectQuery') return this.compileSelect(node, parent, top);
    if (node.node === 'SelectSetQuery') return this.compileSet(node, parent, top);
    return this.refuse(node, `${node.node} is not a query`);
  }

  private compileSet(
    node: Node,
    parent: Scope | undefined,
    top?: { limit: number; offset: number },
  ): CompiledSelect {
    this.onlyKeys(node, new Set(['initial_select_query', 'subsequent_select_queries']));
    const first = this.compileQuery(node.initial_select_query as Node, parent);
    const parts = [`(${first.sql})`];
    const hogql = [first.hogql];
    const ops: Record<string, string> = {
      'UNION ALL': 'UNION ALL',
      'UNION DISTINCT': 'UNION',
      INTERSECT: 'INTERSECT',
      'INTERSECT DISTINCT': 'INTERSECT',
      EXCEPT: 'EXCEPT',
    };
    for (const part of (node.subsequent_select_queries as Node[]) ?? []) {
      const op = ops[String(part.set_operator)];
      if (!op) this.refuse(part, `${String(part.set_operator)} is not served`);
      const next = this.compileQuery(part.select_query as Node, parent);
      if (next.columns.length !== first.columns.length)
        this.refuse(
          part,
          `each part of ${String(part.set_operator)} must select ${first.columns.length} columns`,
        );
      parts.push(`${op} (${next.sql})`);
      hogql.push(`${String(part.set_operator)} ${next.hogql}`);
    }
    const columns = first.columns;
    const list = columns.map((c) => `w.${c.sql}`).join(', ');
    let sql = `SELECT ${list} FROM (${parts.join(' ')}) AS w`;
    let text = hogql.join(' ');
    if (top) {
      top.limit = DEFAULT_LIMIT;
      sql += ` LIMIT ${this.bind(top.limit + 1, 'bigint')}`;
      text += ` LIMIT ${top.limit}`;
    }
    return { sql, hogql: text, columns };
  }

  private compileSelect(
    node: Node,
    parent: Scope | undefined,
    top?: { limit: number; offset: number },
  ): CompiledSelect {
    if (++this.selects > MAX_SELECTS)
      this.refuse(node, `the query holds more than ${MAX_SELECTS} selects (subqueries, CTEs and set parts)`);
    for (const [k, v] of Object.entries(node)) {
      if (META.has(k) || SELECT_SERVED.has(k)) continue;
      if (v === null || v === undefined || v === false || (Array.isArray(v) && v.length === 0)) continue;
      this.refuse(node, `${SELECT_CLAUSES[k] ?? k} is not served`);
    }
    const scope: Scope = { parent, sources: [], aliases: new Map(), ctes: new Map() };
    const withSql: string[] = [];
    const withText: string[] = [];
    for (const cte of (node.ctes as Node[] | null) ?? []) {
      if (cte.cte_type !== 'subquery' || !isNode(cte.expr))
        this.refuse(cte, 'WITH <name> AS <expression> is not served; use WITH <name> AS (SELECT …)');
      this.onlyKeys(cte, new Set(['name', 'expr', 'cte_type']));
      const name = String(cte.name);
      // A CTE sees the ones before it and the outer query's.
      const body = this.compileQuery(cte.expr as Node, scope);
      const sqlName = `w${++this.ctes}`;
      scope.ctes.set(name, { sql: sqlName, columns: body.columns });
      withSql.push(`${sqlName} AS (${body.sql})`);
      withText.push(`${quoteIdent(name)} AS (${body.hogql})`);
    }

    const from = node.select_from as Node | null;
    const joins = from ? this.registerFrom(from, scope) : [];
    const ctx = (clause: Clause): Ctx => ({ scope, clause, inAgg: false });

    // SELECT: each item named by its alias, else its field's last name, else its HogQL.
    const items: Array<{ name: string; expr: Expr }> = [];
    for (const raw of (node.select as Node[]) ?? []) {
      if (raw.node === 'Field' && (raw.chain as unknown[]).at(-1) === '*') {
        items.push(...this.star(raw, scope));
        continue;
      }
      if (raw.node === 'Alias') {
        this.onlyKeys(raw, new Set(['alias', 'expr', 'hidden']));
        const alias = String(raw.alias);
        scope.compiling = alias;
        const e = this.expr(raw.expr as Node, ctx('select'));
        scope.compiling = undefined;
        scope.aliases.set(alias, e);
        items.push({ name: alias, expr: { ...e, hogql: `${e.hogql} AS ${quoteIdent(alias)}` } });
        continue;
      }
      const e = this.expr(raw, ctx('select'));
      const chain = raw.node === 'Field' ? (raw.chain as unknown[]) : undefined;
      items.push({ name: chain ? String(chain.at(-1)) : e.hogql, expr: e });
    }
    if (items.length === 0) this.refuse(node, 'a SELECT needs at least one column');

    const where = node.where ? this.condition(node.where as Node, ctx('where')) : undefined;
    const groupBy = ((node.group_by as Node[] | null) ?? []).map((g) => this.expr(g, ctx('group')));
    const having = node.having ? this.condition(node.having as Node, ctx('having')) : undefined;
    const orderBy = ((node.order_by as Node[] | null) ?? []).map((o) => {
      if (o.node !== 'OrderExpr') this.refuse(o, `${o.node} in ORDER BY is not served`);
      this.onlyKeys(o, new Set(['expr', 'order']));
      const e = this.expr(o.expr as Node, ctx('order'));
      const dir = o.order === 'DESC' ? 'DESC' : 'ASC';
      return { sql: `${e.sql} ${dir}`, hogql: `${e.hogql} ${dir}` };
    });
    for (const e of [where, ...groupBy])
      if (e?.agg) this.refuse(node, 'aggregates are not allowed in WHERE or GROUP BY; use HAVING');

    const limitOf = (n: Node | null | undefined, what: string): number | undefined => {
      if (!n) return undefined;
      const e = this.expr(n, ctx('limit'));
      const v = e.constant?.value;
      if (typeof v !== 'number' || !Number.isInteger(v) || v < 0)
        this.refuse(n, `${what} must be a whole number of rows`);
      return v;
    };
    let limit = limitOf(node.limit as Node | null, 'LIMIT');
    let offset = limitOf(node.offset as Node | null, 'OFFSET');
    if (top) {
      limit = Math.min(limit ?? DEFAULT_LIMIT, MAX_LIMIT);
      top.limit = limit;
      top.offset = offset ?? 0;
      offset = offset ?? 0;
    }

    const columns: OutputColumn[] = items.map((it, i) => ({
      name: it.name,
      type: it.expr.type,
      sql: `c${i}`,
    }));
    const distinct = node.distinct === true;
    let sql = `${withSql.length > 0 ? `WITH ${withSql.join(', ')} ` : ''}SELECT ${distinct ? 'DISTINCT ' : ''}${items
      .map((it, i) => `${it.expr.sql} AS c${i}`)
      .join(', ')}`;
    let text = `${withText.length > 0 ? `WITH ${withText.join(', ')} ` : ''}SELECT ${distinct ? 'DISTINCT ' : ''}${items
      .map((it) => it.expr.hogql)
      .join(', ')}`;
    if (from) {
      const rendered = this.renderFrom(joins, scope);
      sql += ` FROM ${rendered.sql}`;
      text += ` FROM ${rendered.hogql}`;
    }
    if (where) {
      sql += ` WHERE ${where.sql}`;
      text += ` WHERE ${where.hogql}`;
    }
    if (groupBy.length > 0) {
      sql += ` GROUP BY ${groupBy.map((g) => g.sql).join(', ')}`;
      text += ` GROUP BY ${groupBy.map((g) => g.hogql).join(', ')}`;
    }
    if (having) {
      sql += ` HAVING ${having.sql}`;
      text += ` HAVING ${having.hogql}`;
    }
    if (orderBy.length > 0) {
      sql += ` ORDER BY ${orderBy.map((o) => o.sql).join(', ')}`;
      text += ` ORDER BY ${orderBy.map((o) => o.hogql).join(', ')}`;
    }
    if (limit !== undefined) {
      sql += ` LIMIT ${this.bind(top ? limit + 1 : limit, 'bigint')}`;
      text += ` LIMIT ${limit}`;
    }
    if (offset !== undefined && (offset > 0 || !top)) {
      sql += ` OFFSET ${this.bind(offset, 'bigint')}`;
      text += ` OFFSET ${offset}`;
    }
    return { sql, hogql: text, columns };
  }

  /** `*` or `<table>.*`: every column of the sources meant. */
  private star(raw: Node, scope: Scope): Array<{ name: string; expr: Expr }> {
    const chain = raw.chain as string[];
    const sources =
      chain.length === 1
        ? scope.sources
        : scope.sources.filter((s) => s.name === chain[0] && chain.length === 2);
    if (sources.length === 0) this.refuse(raw, `${chain.join('.')} names no table of this SELECT`);
    const out: Array<{ name: string; expr: Expr }> = [];
    for (const s of sources) {
      const names =
        s.table === 'events'
          ? EVENT_STAR
          : s.table === 'persons'
            ? PERSON_STAR
            : s.table === 'groups'
              ? GROUP_STAR
              : s.columns!.map((c) => c.name);
      for (const name of names) out.push({ name, expr: this.column(s, [name], raw)! });
    }
    return out;
  }

  // ---- FROM ----------------------------------------------------------------------------------

  private registerFrom(from: Node, scope: Scope): Array<{ source: Source; node: Node; hogql: string }> {
    const out: Array<{ source: Source; node: Node; hogql: string }> = [];
    for (let j: Node | null = from; j; j = (j.next_join as Node | null) ?? null) {
      if (j.node !== 'JoinExpr') this.refuse(j, `${j.node} in FROM is not served`);
      const args = j.table_args;
      if (Array.isArray(args) && args.length > 0) {
        const fn = (j.table as Node).node === 'Field' ? ((j.table as Node).chain as unknown[]).join('.') : '';
        this.refuse(
          j,
          `the table function ${fn}(…) is not served: the tables served are events, persons and groups`,
        );
      }
      this.onlyKeys(j, new Set(['table', 'alias', 'join_type', 'constraint', 'next_join']), {
        sample: 'SAMPLE',
        table_final: 'FINAL',
        column_aliases: 'a list of column aliases',
      });
      if (++this.tables > MAX_TABLES) this.refuse(j, `the query names more than ${MAX_TABLES} tables`);
      const table = j.table as Node;
      const alias = typeof j.alias === 'string' ? j.alias : undefined;
      let source: Source;
      let hogql: string;
      if (table.node === 'Field') {
        const chain = table.chain as unknown[];
        const name = String(chain[0]);
        const cte = chain.length === 1 ? findCte(scope, name) : undefined;
        if (cte) {
          source = {
            name: alias ?? name,
            sql: `s${this.tables}`,
            table: 'derived',
            columns: cte.columns,
            person: false,
            body: cte.sql,
          };
        } else if (chain.length === 1 && (name === 'events' || name === 'persons' || name === 'groups')) {
          source = { name: alias ?? name, sql: `s${this.tables}`, table: name, person: false };
        } else {
          this.refuse(
            table,
            `unknown table ${chain.map(String).join('.')}: the tables served are events, persons and groups, and the query's own WITH names`,
          );
        }
        hogql = chain.map((c) => quoteIdent(String(c))).join('.');
      } else if (table.node === 'SelectQuery' || table.node === 'SelectSetQuery') {
        const sub = this.compileQuery(table, scope);
        source = {
          name: alias ?? '',
          sql: `s${this.tables}`,
          table: 'derived',
          columns: sub.columns,
          person: false,
          body: `(${sub.sql})`,
        };
        hogql = `(${sub.hogql})`;
      } else {
        this.refuse(table, `${table.node} in FROM is not served`);
      }
      if (alias) hogql += ` AS ${quoteIdent(alias)}`;
      if (scope.sources.some((s) => s.name !== '' && s.name === source.name))
        this.refuse(j, `the table name ${source.name} is used twice in one FROM: give each an alias`);
      scope.sources.push(source);
      out.push({ source, node: j, hogql });
    }
    return out;
  }

  private renderFrom(
    joins: Array<{ source: Source; node: Node; hogql: string }>,
    scope: Scope,
  ): { sql: string; hogql: string } {
    const JOINS: Record<string, string> = {
      JOIN: 'JOIN',
      'INNER JOIN': 'JOIN',
      'LEFT JOIN': 'LEFT JOIN',
      'LEFT OUTER JOIN': 'LEFT JOIN',
      'RIGHT JOIN': 'RIGHT JOIN',
      'RIGHT OUTER JOIN': 'RIGHT JOIN',
      'FULL JOIN': 'FULL JOIN',
      'FULL OUTER JOIN': 'FULL JOIN',
      'CROSS JOIN': 'CROSS JOIN',
    };
    // The ON conditions first: they decide whether an events table reads its persons.
    const ons = joins.map(({ node }, i) => {
      if (i === 0) return undefined;
      const type = String(node.join_type ?? 'JOIN');
      const op = JOINS[type];
      if (!op) this.refuse(node, `${type} is not served`);
      if (op === 'CROSS JOIN') return { op, sql: '', hogql: '' };
      const c = node.constraint as Node | null;
      if (!c || c.constraint_type !== 'ON')
        this.refuse(node, `${type} needs an ON condition (USING is not served)`);
      this.onlyKeys(c, new Set(['expr', 'constraint_type']));
      const e = this.condition(c.expr as Node, { scope, clause: 'on', inAgg: false });
      if (e.agg) this.refuse(c, 'aggregates are not allowed in ON');
      return { op, sql: ` ON ${e.sql}`, hogql: ` ON ${e.hogql}`, type };
    });
    let sql = '';
    let hogql = '';
    joins.forEach(({ source, hogql: h }, i) => {
      const item = `${this.sourceBody(source)} AS ${source.sql}`;
      const on = ons[i];
      if (!on) {
        sql = item;
        hogql = h;
      } else {
        sql += ` ${on.op} ${item}${on.sql}`;
        hogql += ` ${on.op === 'CROSS JOIN' ? 'CROSS JOIN' : (on as { type: string }).type} ${h}${on.hogql}`;
      }
    });
    return { sql, hogql };
  }

  /** A source's FROM item: base tables as subqueries on the project's rows alone. */
  private sourceBody(s: Source): string {
    const team = this.team;
    switch (s.table) {
      case 'events':
        return s.person
          ? `(SELECT ev.uuid, ev.event, ev.distinct_id, ev.properties, ev.timestamp, ev.created_at, ev.group_0, ev.group_1, ev.group_2, ev.group_3, ev.group_4, pp.uuid AS person_uuid, pp.created_at AS person_created_at, pp.properties AS person_properties, pp.is_identified AS person_is_identified FROM events ev LEFT JOIN person_distinct_ids pdi ON pdi.team_id = ev.team_id AND pdi.distinct_id = ev.distinct_id LEFT JOIN persons pp ON pp.id = pdi.person_id AND pp.team_id = ev.team_id WHERE ev.team_id = ${team})`
          : `(SELECT uuid, event, distinct_id, properties, timestamp, created_at, group_0, group_1, group_2, group_3, group_4 FROM events WHERE team_id = ${team})`;
      case 'persons':
        return `(SELECT uuid, created_at, properties, is_identified FROM persons WHERE team_id = ${team})`;
      case 'groups':
        return `(SELECT group_type_index, group_key, group_properties, created_at FROM groups WHERE team_id = ${team})`;
      default:
        return s.body!;
    }
  }

  // ---- fields --------------------------------------------------------------------------------

  /** A column of a source by the chain after its name; undefined when it has no such column. */
  private column(s: Source, rest: string[], at: Node): Expr | undefined {
    const head = rest[0];
    if (head === undefined) return undefined;
    const ref = (col: string) => `${s.sql}.${col}`;
    const plain = (sql: string, type: Type): Expr => ({
      sql,
      hogql: rest.map(quoteIdent).join('.'),
      type,
      agg: false,
    });
    const only = (e: Expr) => {
      if (rest.length > 1) this.refuse(at, `${head} has no field ${rest.slice(1).join('.')}`);
      return e;
    };
    const property = (jsonb: string, path: string[]): Expr => {
      if (path.length === 0) return { ...plain(`(${jsonb})::text`, T('JSON')), sql: `(${jsonb})::text` };
      if (path.length > 8) this.refuse(at, 'property paths nest at most 8 keys');
      const sql =
        path.length === 1
          ? `(${jsonb} ->> ${this.bind(path[0], 'text')})`
          : `(${jsonb} #>> ${this.bind(path, 'text[]')})`;
      return plain(sql, T('String', { nullable: true }));
    };
    if (s.table === 'derived') {
      const c = s.columns!.find((col) => col.name === head);
      if (!c) return undefined;
      if (rest.length > 1 && c.type.kind === 'JSON') return property(`${ref(c.sql)}::jsonb`, rest.slice(1));
      return only(plain(ref(c.sql), c.type));
    }
    if (s.table === 'events') {
      switch (head) {
        case 'uuid':
          return only(plain(ref('uuid'), T('UUID')));
        case 'event':
        case 'distinct_id':
          return only(plain(ref(head), T('String')));
        case 'timestamp':
        case 'created_at':
          return only(plain(ref(head), T('DateTime')));
        case 'elements_chain':
          return only(plain(`''::text`, T('String')));
        case '$session_id':
        case '$window_id':
          return only(
            plain(`(${ref('properties')} ->> ${this.bind(head, 'text')})`, T('String', { nullable: true })),
          );
        case 'properties':
          return property(ref('properties'), rest.slice(1));
        case 'person_id':
          s.person = true;
          return only(plain(this.personIdSql(s), T('UUID')));
        case 'person': {
          s.person = true;
          const field = rest[1];
          if (field === 'id') return plain(this.personIdSql(s), T('UUID'));
          if (field === 'created_at')
            return plain(ref('person_created_at'), T('DateTime', { nullable: true }));
          if (field === 'is_identified')
            return plain(`coalesce(${ref('person_is_identified')}, false)`, T('Bool'));
          if (field === 'properties')
            return property(`coalesce(${ref('person_properties')}, '{}'::jsonb)`, rest.slice(2));
          return this.refuse(at, 'person has the fields id, created_at, is_identified and properties.<key>');
        }
      }
      const group = /^\$group_([0-4])$/.exec(head);
      if (group) return only(plain(`coalesce(${ref(`group_${group[1]}`)}, '')`, T('String')));
      return undefined;
    }
    if (s.table === 'persons') {
      switch (head) {
        case 'id':
          return only(plain(ref('uuid'), T('UUID')));
        case 'created_at':
          return only(plain(ref('created_at'), T('DateTime')));
        case 'is_identified':
          return only(plain(ref('is_identified'), T('Bool')));
        case 'properties':
          return property(ref('properties'), rest.slice(1));
      }
      return undefined;
    }
    switch (head) {
      case 'index':
        return only(plain(ref('group_type_index'), T('Int')));
      case 'key':
        return only(plain(ref('group_key'), T('String')));
      case 'created_at':
        return only(plain(ref('created_at'), T('DateTime')));
      case 'properties':
        return property(ref('group_properties'), rest.slice(1));
    }
    return undefined;
  }

  /** The person an event counts as: its distinct id's person, else an id derived from the
   * distinct id (as PostHog gives events without a person one). */
  private personIdSql(s: Source): string {
    return `coalesce(${s.sql}.person_uuid, md5('d:' || ${s.sql}.distinct_id)::uuid)`;
  }

  private field(node: Node, ctx: Ctx): Expr {
    const chain = (node.chain as unknown[]).map(String);
    if (chain.includes('*')) this.refuse(node, '* is served only as a SELECT column or in count(*)');
    // A select alias of this query (not inside its own definition).
    for (let sc: Scope | undefined = ctx.scope; sc; sc = sc.parent) {
      const byName = sc.sources.find((s) => s.name !== '' && s.name === chain[0]);
      if (byName && chain.length > 1) {
        const e = this.column(byName, chain.slice(1), node);
        if (!e) this.refuse(node, `${byName.name} has no column ${chain.slice(1).join('.')}`);
        return { ...e, hogql: chain.map(quoteIdent).join('.') };
      }
      if (chain.length === 1 && sc === ctx.scope && chain[0] !== sc.compiling) {
        const aliased = sc.aliases.get(chain[0]!);
        if (aliased) return { ...aliased, hogql: quoteIdent(chain[0]!) };
      }
      const found = sc.sources.map((s) => this.column(s, chain, node)).filter((e): e is Expr => !!e);
      if (found.length > 1)
        this.refuse(node, `${chain.join('.')} is ambiguous: more than one table has it; name the table`);
      if (found.length === 1) return found[0]!;
    }
    return this.refuse(node, `unknown field ${chain.join('.')}`);
  }

  // ---- expressions ---------------------------------------------------------------------------

  /** An expression that must be a condition. */
  private condition(node: Node, ctx: Ctx): Expr {
    return this.asBool(this.expr(node, ctx), node);
  }

  expr(node: Node, ctx: Ctx): Expr {
    switch (node.node) {
      case 'Constant':
        return this.constant(node.value, node, node.value_type);
      case 'Field':
        return this.field(node, ctx);
      case 'Alias': {
        const e = this.expr(node.expr as Node, ctx);
        ctx.scope.aliases.set(String(node.alias), e);
        return e;
      }
      case 'Placeholder':
        return this.placeholder(node, ctx);
      case 'And':
      case 'Or': {
        const parts = (node.exprs as Node[]).map((n) => this.condition(n, ctx));
        const op = node.node === 'And' ? 'AND' : 'OR';
        return {
          sql: `(${parts.map((p) => p.sql).join(` ${op} `)})`,
          hogql: `(${parts.map((p) => p.hogql).join(` ${op.toLowerCase()} `)})`,
          type: T('Bool'),
          agg: parts.some((p) => p.agg),
        };
      }
      case 'Not': {
        const e = this.condition(node.expr as Node, ctx);
        return { sql: `(NOT ${e.sql})`, hogql: `not(${e.hogql})`, type: T('Bool'), agg: e.agg };
      }
      case 'CompareOperation':
        return this.compare(node, ctx);
      case 'BetweenExpr': {
        const x = this.expr(node.expr as Node, ctx);
        const low = this.expr(node.low as Node, ctx);
        const high = this.expr(node.high as Node, ctx);
        const a = this.comparison('>=', x, low, node);
        const b = this.comparison('<=', x, high, node);
        const sql = `(${a.sql} AND ${b.sql})`;
        const hogql = `${x.hogql} ${node.negated ? 'NOT ' : ''}BETWEEN ${low.hogql} AND ${high.hogql}`;
        return { sql: node.negated ? `(NOT ${sql})` : sql, hogql, type: T('Bool'), agg: a.agg || b.agg };
      }
      case 'ArithmeticOperation':
        return this.arithmetic(node, ctx);
      case 'Call':
        return this.call(node, ctx);
      case 'TypeCast': {
        const to: Record<string, string> = {
          int: 'toInt',
          integer: 'toInt',
          float: 'toFloat',
          double: 'toFloat',
          string: 'toString',
          text: 'toString',
          varchar: 'toString',
          date: 'toDate',
          datetime: 'toDateTime',
          timestamp: 'toDateTime',
        };
        const fn = to[String(node.type_name).toLowerCase()];
        if (!fn) this.refuse(node, `a cast to ${String(node.type_name)} is not served`);
        return this.call({ node: 'Call', name: fn, args: [node.expr], start: node.start }, ctx);
      }
      case 'SelectQuery':
      case 'SelectSetQuery': {
        const sub = this.compileQuery(node, ctx.scope);
        if (sub.columns.length !== 1) this.refuse(node, 'a subquery used as a value must select one column');
        return {
          sql: `(${sub.sql})`,
          hogql: `(${sub.hogql})`,
          type: { ...sub.columns[0]!.type, nullable: true },
          agg: false,
        };
      }
      case 'Tuple':
      case 'Array':
        return this.refuse(node, `a ${node.node.toLowerCase()} is served only on the right of IN`);
      default:
        return this.refuse(node, `${node.node} is not served`);
    }
  }

  private constant(value: unknown, node: Node, valueType?: unknown): Expr {
    if (value === null)
      return { sql: 'NULL', hogql: 'NULL', type: T('Null'), agg: false, constant: { value } };
    if (typeof value === 'boolean')
      return {
        sql: this.bind(value, 'boolean'),
        hogql: String(value),
        type: T('Bool'),
        agg: false,
        constant: { value },
      };
    if (typeof value === 'number') {
      if (!Number.isFinite(value)) this.refuse(node, 'the number is out of range');
      if (Number.isSafeInteger(value))
        return {
          sql: this.bind(value, 'bigint'),
          hogql: String(value),
          type: T('Int'),
          agg: false,
          constant: { value },
        };
      return {
        sql: this.bind(value, 'float8'),
        hogql: String(value),
        type: T('Float'),
        agg: false,
        constant: { value },
      };
    }
    if (typeof value === 'string') {
      if (valueType === 'number') {
        // Integers past 64 bits, inf and nan come as text.
        if (!/^[0-9]{1,38}$/.test(value)) this.refuse(node, `the number ${value} is out of range`);
        return {
          sql: this.bind(value, 'numeric'),
          hogql: value,
          type: T('Float'),
          agg: false,
          constant: { value: Number(value) },
        };
      }
      return {
        sql: this.bind(value, 'text'),
        hogql: quoteString(value),
        type: T('String'),
        agg: false,
        constant: { value },
      };
    }
    return this.refuse(node, 'this kind of constant is not served');
  }

  private placeholder(node: Node, ctx: Ctx): Expr {
    const inner = node.expr as Node | undefined;
    const chain = inner?.node === 'Field' ? (inner.chain as unknown[]).map(String) : undefined;
    if (!chain) return this.refuse(node, 'a placeholder holds a name, as {name}');
    if (chain[0] === 'filters') {
      if (chain.length === 1) return this.filtersPlaceholder(node, ctx);
      const bound = chain.join('.');
      if (bound !== 'filters.dateRange.from' && bound !== 'filters.dateRange.to')
        this.refuse(
          node,
          `{${bound}} is not served; the filters placeholders are {filters}, {filters.dateRange.from} and {filters.dateRange.to}`,
        );
      const value = bound.endsWith('from')
        ? this.o.filters?.dateRange?.date_from
        : this.o.filters?.dateRange?.date_to;
      // An absent bound makes the comparison it is in hold (compare() reads this marker).
      if (value === undefined || value === null || value === 'all')
        return {
          sql: 'NULL',
          hogql: `{${bound}}`,
          type: T('Null'),
          agg: false,
          constant: { value: UNBOUNDED },
        };
      return { sql: this.dateBound(value, bound), hogql: `{${bound}}`, type: T('DateTime'), agg: false };
    }
    if (
      chain.length !== 1 ||
      !this.o.values ||
      !Object.prototype.hasOwnProperty.call(this.o.values, chain[0]!)
    )
      this.refuse(node, `{${chain.join('.')}} has no value: send it in values`);
    const value = this.o.values[chain[0]!];
    if (Array.isArray(value))
      return this.refuse(node, `{${chain[0]}} must be a string, a number, a boolean or null`);
    const e = this.constant(value, node);
    return { ...e, hogql: `{${chain[0]}}` };
  }

  private dateBound(value: string, attr: string): string {
    const field = `query.filters.dateRange.${attr.endsWith('from') ? 'date_from' : 'date_to'}`;
    const at = instantOf(value, field);
    if (at) return this.bind(at, 'timestamptz');
    const local = parseDate(value, localOf(this.o.now, this.o.timeZone), field, false);
    return `(${this.bind(localText(local), 'timestamp')} AT TIME ZONE ${this.zone()})`;
  }

  /** {filters}: the request's filters on the events table of this SELECT, as PostHog applies them. */
  private filtersPlaceholder(node: Node, ctx: Ctx): Expr {
    const events = ctx.scope.sources.find((s) => s.table === 'events');
    if (!events) this.refuse(node, '{filters} is served in a SELECT from events');
    const f = this.o.filters ?? {};
    const parts: string[] = [];
    const groups = [nodeFilters(f.properties, 'query.filters.properties')];
    if (f.filterTestAccounts) groups.push(nodeFilters(this.o.testAccountFilters, 'filterTestAccounts'));
    for (const g of groups) {
      if (!g) continue;
      this.groups.push(g);
      if (JSON.stringify(g).includes('"type":"person"')) events.person = true;
      const sources = {
        event: `${events.sql}.properties`,
        person: `coalesce(${events.sql}.person_properties, '{}'::jsonb)`,
      };
      parts.push(propertyFilterSql(g, sources, (v) => this.bind(v), this.o.now));
    }
    const to = f.dateRange?.date_to;
    if (to) parts.push(`${events.sql}.timestamp < ${this.dateBound(to, 'filters.dateRange.to')}`);
    const from = f.dateRange?.date_from;
    if (from && from !== 'all')
      parts.push(`${events.sql}.timestamp >= ${this.dateBound(from, 'filters.dateRange.from')}`);
    return {
      sql: parts.length > 0 ? `(${parts.join(' AND ')})` : 'TRUE',
      hogql: '{filters}',
      type: T('Bool'),
      agg: false,
    };
  }

  // ---- conversions ---------------------------------------------------------------------------

  private asBool(e: Expr, at: Node): Expr {
    if (e.type.kind === 'Bool' || e.type.kind === 'Null') return e;
    if (e.type.kind === 'Int') return { ...e, sql: `(${e.sql} <> 0)`, type: T('Bool') };
    return this.refuse(
      at,
      `${e.hogql} is ${e.type.kind === 'String' ? 'text' : e.type.kind}, not a condition`,
    );
  }

  /** As a number: text casts when it is one (else null), as HogQL's toFloatOrNull. */
  private asNumber(e: Expr, at: Node): Expr {
    if (isNumber(e.type) || e.type.kind === 'Null') return e;
    if (e.type.kind === 'Bool') return { ...e, sql: `(${e.sql})::int`, type: T('Int') };
    if (e.type.kind === 'String') {
      if (e.constant && typeof e.constant.value === 'string') {
        const n = Number(e.constant.value);
        if (e.constant.value.trim() === '' || !Number.isFinite(n))
          this.refuse(at, `${e.hogql} is not a number`);
        return this.constant(n, at);
      }
      return {
        ...e,
        sql: `(CASE WHEN length(${e.sql}) <= 200 AND ${e.sql} ~ ${NUMERIC_RE} THEN (${e.sql})::float8 END)`,
        type: T('Float', { nullable: true }),
      };
    }
    return this.refuse(at, `${e.hogql} is ${e.type.kind}, not a number`);
  }

  /** As an instant: text casts when it is an ISO date (else null), in the project's zone when
   * it has no offset. */
  private asTime(e: Expr, at: Node): Expr {
    switch (e.type.kind) {
      case 'DateTime':
      case 'Null':
        return e;
      case 'Date':
        return { ...e, sql: `((${e.sql})::timestamp AT TIME ZONE ${this.zone()})`, type: T('DateTime') };
      case 'String': {
        if (e.constant && typeof e.constant.value === 'string') {
          const v = e.constant.value;
          const instant = instantOf(v, this.source.attr);
          if (instant) return { ...e, sql: this.bind(instant, 'timestamptz'), type: T('DateTime') };
          const m = /^(\d{4})-(\d{2})-(\d{2})(?:[ T](\d{2}):(\d{2})(?::(\d{2})(?:\.\d+)?)?)?$/.exec(v);
          if (!m || Number.isNaN(Date.parse(`${m[0].replace(' ', 'T')}Z`)))
            this.refuse(at, `${e.hogql} is not a date`);
          return {
            ...e,
            sql: `(${this.bind(m[0].replace('T', ' '), 'timestamp')} AT TIME ZONE ${this.zone()})`,
            type: T('DateTime'),
          };
        }
        const x = e.sql;
        const cast = `CASE WHEN ${x} ~ ${OFFSET_RE} THEN (${x})::timestamptz ELSE ((${x})::timestamp AT TIME ZONE ${this.zone()}) END`;
        return {
          ...e,
          sql: `(CASE WHEN length(${x}) <= 40 THEN ${whenIsoDateSql(x, cast)} END)`,
          type: T('DateTime', { nullable: true }),
        };
      }
      case 'Int':
        return { ...e, sql: `to_timestamp(${e.sql})`, type: T('DateTime') };
      default:
        return this.refuse(at, `${e.hogql} is ${e.type.kind}, not a date`);
    }
  }

  /** As text, as HogQL's toString writes each type. */
  private asText(e: Expr): Expr {
    const x = e.sql;
    switch (e.type.kind) {
      case 'String':
      case 'Null':
        return e;
      case 'DateTime':
        return {
          ...e,
          sql: `to_char((${x}) AT TIME ZONE ${this.zone(e.type)}, 'YYYY-MM-DD HH24:MI:SS')`,
          type: T('String'),
        };
      case 'Date':
        return { ...e, sql: `to_char(${x}, 'YYYY-MM-DD')`, type: T('String') };
      case 'Bool':
        return { ...e, sql: `CASE WHEN ${x} THEN 'true' WHEN NOT ${x} THEN 'false' END`, type: T('String') };
      default:
        return { ...e, sql: `(${x})::text`, type: T('String', { nullable: e.type.nullable }) };
    }
  }

  /** A local wall-clock timestamp of a time or date, in its zone. */
  private local(e: Expr, at: Node): string {
    if (e.type.kind === 'Date') return `(${e.sql})::timestamp`;
    const t = this.asTime(e, at);
    return `((${t.sql}) AT TIME ZONE ${this.zone(e.type)})`;
  }

  // ---- comparisons and arithmetic -----------------------------------------------------------

  private compare(node: Node, ctx: Ctx): Expr {
    this.onlyKeys(node, new Set(['left', 'right', 'op', 'is_null_comparison_style']));
    const op = String(node.op);
    const left = this.expr(node.left as Node, ctx);
    const rightNode = node.right as Node;
    if (op === 'in' || op === 'not in') return this.inList(left, rightNode, op === 'not in', ctx, node);
    const right = this.expr(rightNode, ctx);
    if (left.constant?.value === UNBOUNDED || right.constant?.value === UNBOUNDED)
      return { sql: 'TRUE', hogql: `${left.hogql} ${op} ${right.hogql}`, type: T('Bool'), agg: false };
    return this.comparison(op, left, right, node);
  }

  private comparison(op: string, left: Expr, right: Expr, node: Node): Expr {
    const agg = left.agg || right.agg;
    const hogql = `${left.hogql} ${op === '==' ? '=' : op} ${right.hogql}`;
    const out = (sql: string): Expr => ({ sql: `(${sql})`, hogql, type: T('Bool'), agg });
    if (right.type.kind === 'Null' || left.type.kind === 'Null') {
      const other = right.type.kind === 'Null' ? left : right;
      if (op === '==') return out(`${other.sql} IS NULL`);
      if (op === '!=') return out(`${other.sql} IS NOT NULL`);
      return out('NULL::boolean');
    }
    const likes: Record<string, string> = {
      like: 'LIKE',
      'not like': 'NOT LIKE',
      ilike: 'ILIKE',
      'not ilike': 'NOT ILIKE',
    };
    if (likes[op]) return out(`${this.asText(left).sql} ${likes[op]} ${this.asText(right).sql}`);
    const regexes: Record<string, string> = { '=~': '~', '!~': '!~', '=~*': '~*', '!~*': '!~*' };
    if (regexes[op]) return out(`${this.asText(left).sql} ${regexes[op]} ${this.pattern(right, node)}`);
    const sqlOp: Record<string, string> = {
      '==': '=',
      '!=': '<>',
      '<': '<',
      '<=': '<=',
      '>': '>',
      '>=': '>=',
    };
    const o = sqlOp[op];
    if (!o) this.refuse(node, `the operator ${op} is not served`);
    const [l, r] = this.unify(left, right, node);
    return out(`${l.sql} ${o} ${r.sql}`);
  }

  /** Both sides of a comparison in one type, casting as HogQL does. */
  private unify(a: Expr, b: Expr, at: Node): [Expr, Expr] {
    const ka = a.type.kind;
    const kb = b.type.kind;
    if (ka === kb && ka !== 'Bool') return [a, b];
    if (isNumber(a.type) && isNumber(b.type)) return [a, b];
    if (isNumber(a.type) || isNumber(b.type)) return [this.asNumber(a, at), this.asNumber(b, at)];
    const timeKinds = ['DateTime', 'Date'];
    if (timeKinds.includes(ka) || timeKinds.includes(kb)) {
      if (ka === 'Date' && kb === 'Date') return [a, b];
      return [this.asTime(a, at), this.asTime(b, at)];
    }
    if (ka === 'Bool' || kb === 'Bool') {
      const bool = (e: Expr): Expr =>
        e.type.kind === 'Bool'
          ? e
          : { ...e, sql: `(lower(${this.asText(e).sql}) = 'true')`, type: T('Bool') };
      return [bool(a), bool(b)];
    }
    return [this.asText(a), this.asText(b)];
  }

  private pattern(e: Expr, at: Node): string {
    if (typeof e.constant?.value !== 'string')
      this.refuse(at, 'a regular expression must be a constant string');
    this.patterns.push({ pattern: e.constant.value as string, attr: this.source.attr, key: e.hogql });
    return e.sql;
  }

  private inList(left: Expr, right: Node, negated: boolean, ctx: Ctx, node: Node): Expr {
    const not = negated ? 'NOT ' : '';
    if (right.node === 'SelectQuery' || right.node === 'SelectSetQuery') {
      const sub = this.compileQuery(right, ctx.scope);
      if (sub.columns.length !== 1) this.refuse(right, 'a subquery after IN must select one column');
      const inner = sub.columns[0]!.type;
      const l = isNumber(inner)
        ? this.asNumber(left, node)
        : inner.kind === 'String'
          ? this.asText(left)
          : left;
      return {
        sql: `(${l.sql} ${not}IN (SELECT q.c0 FROM (${sub.sql}) AS q))`,
        hogql: `${left.hogql} ${not.toLowerCase()}in (${sub.hogql})`,
        type: T('Bool'),
        agg: left.agg,
      };
    }
    const items = right.node === 'Tuple' || right.node === 'Array' ? (right.exprs as Node[]) : [right];
    const values = items.map((n) => this.expr(n, ctx));
    if (values.length === 0)
      return {
        sql: negated ? 'TRUE' : 'FALSE',
        hogql: `${left.hogql} ${not.toLowerCase()}in ()`,
        type: T('Bool'),
        agg: left.agg,
      };
    const hogql = `${left.hogql} ${not.toLowerCase()}in (${values.map((v) => v.hogql).join(', ')})`;
    if (
      values.every((v) => v.constant && v.constant.value !== null && typeof v.constant.value !== 'boolean')
    ) {
      // One array parameter for the list, in the left side's type.
      const numeric = isNumber(left.type) || values.every((v) => typeof v.constant!.value === 'number');
      const l = numeric ? this.asNumber(left, node) : this.asText(left);
      const list = values.map((v) => (numeric ? Number(v.constant!.value) : String(v.constant!.value)));
      if (numeric && list.some((n) => typeof n === 'number' && !Number.isFinite(n)))
        this.refuse(node, 'the list after IN mixes numbers and text');
      return {
        sql: `(${negated ? 'NOT ' : ''}coalesce(${l.sql} = ANY(${this.bind(list, numeric ? 'float8[]' : 'text[]')}), false))`,
        hogql,
        type: T('Bool'),
        agg: left.agg,
      };
    }
    const parts = values.map((v) => this.comparison('==', left, v, node).sql);
    return {
      sql: `(${not}(${parts.join(' OR ')}))`,
      hogql,
      type: T('Bool'),
      agg: left.agg || values.some((v) => v.agg),
    };
  }

  private arithmetic(node: Node, ctx: Ctx): Expr {
    this.onlyKeys(node, new Set(['left', 'right', 'op']));
    const op = String(node.op);
    const a = this.expr(node.left as Node, ctx);
    const b = this.expr(node.right as Node, ctx);
    const agg = a.agg || b.agg;
    const hogql = `${a.hogql} ${op} ${b.hogql}`;
    const timey = (k: Kind) => k === 'DateTime' || k === 'Date';
    if ((op === '+' || op === '-') && (timey(a.type.kind) || timey(b.type.kind))) {
      const [time, other] = timey(a.type.kind) ? [a, b] : [b, a];
      if (op === '-' && time === b) this.refuse(node, 'only an interval can be subtracted from a date');
      if (other.type.kind === 'Interval') {
        if (time.type.kind === 'Date')
          return { sql: `((${time.sql}) ${op} ${other.sql})::date`, hogql, type: T('Date'), agg };
        return { sql: `(${time.sql} ${op} ${other.sql})`, hogql, type: time.type, agg };
      }
      if (time.type.kind === 'Date' && other.type.kind === 'Int')
        return { sql: `(${time.sql} ${op} (${other.sql})::int)`, hogql, type: T('Date'), agg };
      this.refuse(node, `${hogql}: add or subtract an interval (INTERVAL 7 DAY, toIntervalDay(7)) to a date`);
    }
    for (const e of [a, b])
      if (!isNumber(e.type) && e.type.kind !== 'Null')
        this.refuse(
          node,
          `${e.hogql} is ${e.type.kind === 'String' ? 'text' : e.type.kind}: cast it with toFloat() or toInt() for arithmetic`,
        );
    const float = a.type.kind === 'Float' || b.type.kind === 'Float';
    switch (op) {
      case '+':
      case '-':
      case '*':
        return float
          ? { sql: `((${a.sql})::float8 ${op} (${b.sql})::float8)`, hogql, type: T('Float'), agg }
          : { sql: `(${a.sql} ${op} ${b.sql})`, hogql, type: T('Int'), agg };
      case '/':
        return {
          sql: `((${a.sql})::float8 / NULLIF((${b.sql})::float8, 0))`,
          hogql,
          type: T('Float', { nullable: true }),
          agg,
        };
      case '%':
        if (float) this.refuse(node, '% takes whole numbers');
        return { sql: `mod(${a.sql}, NULLIF(${b.sql}, 0))`, hogql, type: T('Int', { nullable: true }), agg };
    }
    return this.refuse(node, `the operator ${op} is not served`);
  }

  // ---- functions ----------------------------------------------------------------------------

  private call(node: Node, ctx: Ctx): Expr {
    this.onlyKeys(node, new Set(['name', 'args', 'params', 'distinct']), {
      filter_expr: 'FILTER (WHERE …) on a call',
      order_by: 'ORDER BY inside a call',
    });
    const name = String(node.name);
    const fn = FUNCTIONS[name.toLowerCase()];
    if (!fn) this.refuse(node, `unknown function ${name}: docs/hogql.md lists the functions served`);
    const argNodes = (node.args as Node[] | null) ?? [];
    const paramNodes = (node.params as Node[] | null) ?? [];
    if (fn.aggregate) {
      if (ctx.clause !== 'select' && ctx.clause !== 'having' && ctx.clause !== 'order')
        this.refuse(node, `the aggregate ${name} is allowed in SELECT, HAVING and ORDER BY only`);
      if (ctx.inAgg) this.refuse(node, `the aggregate ${name} is inside another aggregate`);
    }
    if (node.distinct && fn.name !== 'count')
      this.refuse(node, `DISTINCT is served in count(DISTINCT …) only`);
    if (paramNodes.length > 0 && !fn.params) this.refuse(node, `${name} takes no parameters`);
    const inner: Ctx = { ...ctx, inAgg: ctx.inAgg || !!fn.aggregate };
    // count(*): the star is no column.
    const star =
      argNodes.length === 1 &&
      argNodes[0]!.node === 'Field' &&
      (argNodes[0]!.chain as unknown[]).join('.') === '*';
    const args = star ? [] : argNodes.map((a) => this.expr(a, inner));
    const params = paramNodes.map((p) => this.expr(p, { ...ctx, clause: 'limit' }));
    const [min, max] = fn.arity;
    if (args.length < min || args.length > max)
      this.refuse(
        node,
        `${name} takes ${min === max ? min : `${min} to ${max === Infinity ? 'any number of' : max}`} arguments`,
      );
    const e = fn.compile(this, args, node, { params, distinct: node.distinct === true, name: fn.alias });
    const hogqlArgs = star ? '*' : args.map((a) => a.hogql).join(', ');
    const hogql = `${name}${params.length > 0 ? `(${params.map((p) => p.hogql).join(', ')})` : ''}(${node.distinct ? 'DISTINCT ' : ''}${hogqlArgs})`;
    return { ...e, hogql, agg: !!fn.aggregate || args.some((a) => a.agg) };
  }

  /**
   * EventsQuery's statement: one events table, each `select`, `where` and `orderBy` entry a HogQL
   * expression compiled as a HogQLQuery's would be (so a column means the same in both), plus
   * the kind's own conditions. With an aggregate selected, the rows group by the other columns.
   */
  eventsQuery(spec: EventsSpec): { sql: string; columns: Array<{ type: Type; agg: boolean }> } {
    const events: Source = { name: 'events', sql: 's1', table: 'events', person: false };
    this.tables = 1;
    const scope: Scope = { sources: [events], aliases: new Map(), ctes: new Map() };
    const inEntry = <R>(entry: { text: string; attr: string }, work: () => R): R => {
      const before = this.source;
      this.source = entry;
      try {
        return work();
      } finally {
        this.source = before;
      }
    };
    const columns = spec.select.map((entry) =>
      inEntry(entry, () => {
        if (entry.special === '*')
          return {
            sql: `json_build_object('uuid', s1.uuid, 'event', s1.event, 'properties', s1.properties, 'timestamp', s1.timestamp, 'team_id', ${this.team}, 'distinct_id', s1.distinct_id, 'elements_chain', '', 'created_at', s1.created_at)`,
            type: T('JSON'),
            agg: false,
          };
        if (entry.special === 'person') {
          events.person = true;
          return {
            sql: `CASE WHEN s1.person_uuid IS NULL THEN NULL ELSE json_build_object('uuid', s1.person_uuid, 'created_at', s1.person_created_at, 'properties', s1.person_properties, 'distinct_id', s1.distinct_id) END`,
            type: T('JSON'),
            agg: false,
          };
        }
        const e = this.expr(entry.ast!, { scope, clause: 'select', inAgg: false });
        return { sql: e.sql, type: e.type, agg: e.agg };
      }),
    );
    const conditions = spec.where.map((w) =>
      inEntry(w, () => {
        const e = this.condition(w.ast, { scope, clause: 'where', inAgg: false });
        if (e.agg) this.refuse(w.ast, 'aggregates are not allowed in where');
        return e.sql;
      }),
    );
    conditions.push(...spec.conditions({ sql: 's1', usePerson: () => (events.person = true) }));
    const grouped = columns.some((c) => c.agg);
    const order = spec.orderBy.map((o) =>
      inEntry(o, () => {
        if (o.ast.node !== 'OrderExpr') this.refuse(o.ast, 'an order is an expression and ASC or DESC');
        const e = this.expr(o.ast.expr as Node, { scope, clause: 'order', inAgg: false });
        return `${e.sql} ${o.ast.order === 'DESC' ? 'DESC' : 'ASC'}`;
      }),
    );
    if (order.length === 0) {
      const count = columns.findIndex((c) => c.sql === 'count(*)');
      if (!grouped) order.push('s1.timestamp DESC');
      else if (count !== -1) order.push(`${count + 1} DESC`);
    }
    // A stable order for pages of rows with the same sort values.
    if (!grouped) order.push('s1.uuid DESC');
    const groupBy = grouped ? columns.flatMap((c, i) => (c.agg ? [] : [String(i + 1)])) : [];
    const sql = `SELECT ${columns.map((c, i) => `${c.sql} AS c${i}`).join(', ')}
      FROM ${this.sourceBody(events)} AS s1
     WHERE ${conditions.length > 0 ? conditions.join(' AND ') : 'TRUE'}
     ${groupBy.length > 0 ? `GROUP BY ${groupBy.join(', ')}` : ''}
     ORDER BY ${order.join(', ')}`;
    return { sql, columns };
  }

  // Exposed to the function table (below).
  readonly helpers = {
    refuse: (node: Node, detail: string) => this.refuse(node, detail),
    number: (e: Expr, at: Node) => this.asNumber(e, at),
    time: (e: Expr, at: Node) => this.asTime(e, at),
    text: (e: Expr) => this.asText(e),
    bool: (e: Expr, at: Node) => this.asBool(e, at),
    local: (e: Expr, at: Node) => this.local(e, at),
    zone: (t?: Type) => this.zone(t),
    bind: (v: unknown, cast: string) => this.bind(v, cast),
    pattern: (e: Expr, at: Node) => this.pattern(e, at),
    compare: (op: string, a: Expr, b: Expr, at: Node) => this.comparison(op, a, b, at),
    unify: (a: Expr, b: Expr, at: Node) => this.unify(a, b, at),
    now: () => this.o.now,
    timeZone: () => this.o.timeZone,
  };
}

const UNBOUNDED = Symbol('unbounded date placeholder');

function findCte(scope: Scope, name: string): Cte | undefined {
  for (let s: Scope | undefined = scope; s; s = s.parent) {
    const c = s.ctes.get(name);
    if (c) return c;
  }
  return undefined;
}

// ---- the function table -----------------------------------------------------------------------

type Helpers = HogQLCompiler['helpers'];
interface FnInfo {
  /** The first of its names (count, sum, …). */
  name: string;
  /** The name it was registered under, as this file spells it (isNotNull, sumIf). */
  alias: string;
  arity: [number, number];
  aggregate?: boolean;
  params?: boolean;
  compile(
    c: HogQLCompiler,
    args: Expr[],
    node: Node,
    extra: { params: Expr[]; distinct: boolean; name: string },
  ): Omit<Expr, 'hogql' | 'agg'>;
}

// By lower-case name: HogQL's function names are matched without regard to case here.
const FUNCTIONS: Record<string, FnInfo> = {};
const NAMES: string[] = [];
function fn(names: string[], info: Omit<FnInfo, 'name' | 'alias'>): void {
  for (const n of names) {
    FUNCTIONS[n.toLowerCase()] = { ...info, name: names[0]!, alias: n };
    NAMES.push(n);
  }
}
const h = (c: HogQLCompiler): Helpers => c.helpers;
const sameType = (c: HogQLCompiler, args: Expr[], node: Node): Expr[] => {
  const typed = args.filter((a) => a.type.kind !== 'Null');
  if (typed.length === 0) return args;
  const first = typed[0]!;
  if (typed.every((a) => a.type.kind === first.type.kind)) return args;
  if (typed.every((a) => isNumber(a.type)))
    return args.map((a) =>
      a.type.kind === 'Null' ? a : { ...a, sql: `(${a.sql})::float8`, type: T('Float') },
    );
  if (typed.some((a) => isNumber(a.type))) return args.map((a) => h(c).number(a, node));
  return args.map((a) => h(c).text(a));
};
const resultType = (args: Expr[]): Type => {
  const typed = args.filter((a) => a.type.kind !== 'Null');
  return typed.length > 0 ? { ...typed[0]!.type, nullable: true } : T('Null');
};
const constantParam = (c: HogQLCompiler, params: Expr[], node: Node, what: string): number => {
  const v = params[0]?.constant?.value;
  if (params.length !== 1 || typeof v !== 'number') h(c).refuse(node, `${what} takes one number parameter`);
  return v as number;
};
const aggFilter = (cond: Expr | undefined) => (cond ? ` FILTER (WHERE ${cond.sql})` : '');

// Aggregates.
fn(['count'], {
  arity: [0, 1],
  aggregate: true,
  compile: (c, [x], node, { distinct }) => {
    if (!x) {
      if (distinct) h(c).refuse(node, 'count(DISTINCT) needs an argument');
      return { sql: 'count(*)', type: T('Int', { count: true }) };
    }
    return { sql: `count(${distinct ? 'DISTINCT ' : ''}${x.sql})`, type: T('Int', { count: true }) };
  },
});
fn(['countIf'], {
  arity: [1, 1],
  aggregate: true,
  compile: (c, [cond], node) => ({
    sql: `count(*)${aggFilter(h(c).bool(cond!, node))}`,
    type: T('Int', { count: true }),
  }),
});
fn(['uniq', 'uniqExact', 'count_distinct'], {
  arity: [1, 8],
  aggregate: true,
  compile: (_c, args) => ({
    sql:
      args.length === 1
        ? `count(DISTINCT ${args[0]!.sql})`
        : `count(DISTINCT ROW(${args.map((a) => a.sql).join(', ')}))`,
    type: T('Int', { count: true }),
  }),
});
for (const [names, agg] of [
  [['sum', 'sumIf'], 'sum'],
  [['avg', 'avgIf'], 'avg'],
] as const)
  fn([...names], {
    arity: [1, 2],
    aggregate: true,
    compile: (c, [x, cond], node, { name }) => {
      if (cond === undefined && name.endsWith('If'))
        h(c).refuse(node, `${name} takes a value and a condition`);
      if (cond !== undefined && !name.endsWith('If')) h(c).refuse(node, `${name} takes one argument`);
      const n = h(c).number(x!, node);
      const filter = aggFilter(cond && h(c).bool(cond, node));
      if (agg === 'sum' && n.type.kind === 'Int')
        return { sql: `(sum(${n.sql})${filter})::bigint`, type: T('Int') };
      return { sql: `(${agg}((${n.sql})::float8)${filter})`, type: T('Float') };
    },
  });
for (const agg of ['min', 'max'] as const)
  fn([agg, `${agg}If`], {
    arity: [1, 2],
    aggregate: true,
    compile: (c, [x, cond], node, { name }) => {
      if ((cond === undefined) === name.endsWith('If'))
        h(c).refuse(
          node,
          `${name} takes ${name.endsWith('If') ? 'a value and a condition' : 'one argument'}`,
        );
      if (x!.type.kind === 'JSON' || x!.type.kind === 'Array')
        h(c).refuse(node, `${agg} of ${x!.type.kind} is not served`);
      return {
        sql: `${agg}(${x!.sql})${aggFilter(cond && h(c).bool(cond, node))}`,
        type: x!.type,
      };
    },
  });
fn(['quantile'], {
  arity: [1, 1],
  aggregate: true,
  params: true,
  compile: (c, [x], node, { params }) => {
    const p = constantParam(c, params, node, 'quantile');
    if (!(p >= 0 && p <= 1)) h(c).refuse(node, 'quantile(p) takes p from 0 to 1');
    const n = h(c).number(x!, node);
    return {
      sql: `percentile_cont(${h(c).bind(p, 'float8')}) WITHIN GROUP (ORDER BY (${n.sql})::float8)`,
      type: T('Float', { nullable: true }),
    };
  },
});
fn(['median'], {
  arity: [1, 1],
  aggregate: true,
  compile: (c, [x], node) => {
    const n = h(c).number(x!, node);
    return {
      sql: `percentile_cont(0.5) WITHIN GROUP (ORDER BY (${n.sql})::float8)`,
      type: T('Float', { nullable: true }),
    };
  },
});
fn(['groupArray'], {
  arity: [1, 1],
  aggregate: true,
  params: true,
  compile: (c, [x], node, { params }) => {
    if (params.length === 0) h(c).refuse(node, 'groupArray needs a limit here: groupArray(100)(x)');
    const n = constantParam(c, params, node, 'groupArray');
    if (!Number.isInteger(n) || n < 1 || n > 10_000)
      h(c).refuse(node, 'groupArray(n) takes n from 1 to 10,000');
    if (x!.type.kind === 'Array') h(c).refuse(node, 'groupArray of arrays is not served');
    const v = x!.type.kind === 'JSON' ? h(c).text(x!) : x!;
    // Capped while it aggregates (a migration's aggregate): never more than n values held.
    return { sql: `sett_group_array(${v.sql}, ${h(c).bind(n, 'int')})`, type: T('Array', { of: v.type }) };
  },
});

// Conditionals.
fn(['if'], {
  arity: [3, 3],
  compile: (c, [cond, a, b], node) => {
    const [x, y] = sameType(c, [a!, b!], node);
    return {
      sql: `(CASE WHEN ${h(c).bool(cond!, node).sql} THEN ${x!.sql} ELSE ${y!.sql} END)`,
      type: resultType([x!, y!]),
    };
  },
});
fn(['multiIf'], {
  arity: [3, 61],
  compile: (c, args, node) => {
    if (args.length % 2 !== 1)
      h(c).refuse(node, 'multiIf takes pairs of condition and value, and a last value');
    const values = sameType(
      c,
      args.filter((_, i) => i % 2 === 1 || i === args.length - 1),
      node,
    );
    const whens: string[] = [];
    for (let i = 0; i + 1 < args.length; i += 2)
      whens.push(`WHEN ${h(c).bool(args[i]!, node).sql} THEN ${values[i / 2]!.sql}`);
    return { sql: `(CASE ${whens.join(' ')} ELSE ${values.at(-1)!.sql} END)`, type: resultType(values) };
  },
});
fn(['coalesce', 'ifNull'], {
  arity: [1, 32],
  compile: (c, args, node) => {
    const typed = sameType(c, args, node);
    return {
      sql: `coalesce(${typed.map((a) => a.sql).join(', ')})`,
      type: { ...resultType(typed), nullable: typed.every((a) => a.type.nullable) },
    };
  },
});
fn(['isNull', 'isNotNull'], {
  arity: [1, 1],
  compile: (_c, [x], _node, { name }) => ({
    sql: `(${x!.sql} IS ${name === 'isNull' ? '' : 'NOT '}NULL)`,
    type: T('Bool'),
  }),
});

// Text.
for (const [name, sqlFn] of [
  ['lower', 'lower'],
  ['upper', 'upper'],
  ['trim', 'btrim'],
] as const)
  fn([name], {
    arity: [1, 1],
    compile: (c, [x]) => ({
      sql: `${sqlFn}(${h(c).text(x!).sql})`,
      type: { ...T('String'), nullable: x!.type.nullable },
    }),
  });
fn(['length'], {
  arity: [1, 1],
  compile: (c, [x]) =>
    x!.type.kind === 'Array'
      ? { sql: `coalesce(cardinality(${x!.sql}), 0)`, type: T('Int') }
      : { sql: `octet_length(${h(c).text(x!).sql})`, type: T('Int', { nullable: x!.type.nullable }) },
});
fn(['empty', 'notEmpty'], {
  arity: [1, 1],
  compile: (c, [x], _n, { name }) => ({
    sql: `(coalesce(${h(c).text(x!).sql}, '') ${name === 'empty' ? '=' : '<>'} '')`,
    type: T('Bool'),
  }),
});
fn(['concat'], {
  arity: [1, 32],
  compile: (c, args) => ({
    sql: `concat(${args.map((a) => h(c).text(a).sql).join(', ')})`,
    type: T('String'),
  }),
});
fn(['substring', 'substr'], {
  arity: [2, 3],
  compile: (c, [s, from, len], node) => {
    const f = h(c).number(from!, node);
    const l = len && h(c).number(len, node);
    return {
      sql: `substr(${h(c).text(s!).sql}, (${f.sql})::int${l ? `, greatest((${l.sql})::int, 0)` : ''})`,
      type: T('String', { nullable: s!.type.nullable }),
    };
  },
});
for (const [name, op] of [
  ['like', 'like'],
  ['notLike', 'not like'],
  ['ilike', 'ilike'],
  ['notILike', 'not ilike'],
] as const)
  fn([name], { arity: [2, 2], compile: (c, [a, b], node) => h(c).compare(op, a!, b!, node) });
fn(['match'], {
  arity: [2, 2],
  compile: (c, [s, re], node) => ({
    sql: `(${h(c).text(s!).sql} ~ ${h(c).pattern(re!, node)})`,
    type: T('Bool'),
  }),
});
fn(['toString'], { arity: [1, 1], compile: (c, [x]) => h(c).text(x!) });

// Numbers.
fn(['toInt', 'toInt64', 'toInt32', 'toUInt64', 'toUInt32', 'toIntOrNull', 'toInt64OrNull'], {
  arity: [1, 1],
  compile: (c, [x], node) => {
    const v = x!;
    switch (v.type.kind) {
      case 'Int':
        return v;
      case 'Float':
        return {
          sql: `(CASE WHEN abs(${v.sql}) < 9.2e18 THEN trunc(${v.sql})::bigint END)`,
          type: T('Int', { nullable: true }),
        };
      case 'Bool':
        return { sql: `(${v.sql})::int::bigint`, type: T('Int') };
      case 'DateTime':
        return { sql: `floor(extract(epoch FROM ${v.sql}))::bigint`, type: T('Int') };
      case 'String':
        return {
          sql: `(CASE WHEN ${v.sql} ~ ${INT_RE} THEN (${v.sql})::bigint END)`,
          type: T('Int', { nullable: true }),
        };
      case 'Null':
        return v;
    }
    return h(c).refuse(node, `toInt of ${v.type.kind} is not served`);
  },
});
fn(['toFloat', 'toFloat64', 'toFloatOrNull', 'toFloat64OrNull'], {
  arity: [1, 1],
  compile: (c, [x], node) => {
    const n = h(c).number(x!, node);
    return { sql: `(${n.sql})::float8`, type: T('Float', { nullable: n.type.nullable }) };
  },
});
fn(['round'], {
  arity: [1, 2],
  compile: (c, [x, digits], node) => {
    const n = h(c).number(x!, node);
    const d = digits?.constant?.value ?? 0;
    if (typeof d !== 'number' || !Number.isInteger(d) || d < -20 || d > 20)
      h(c).refuse(node, 'round takes a whole number of digits from -20 to 20');
    return {
      sql: `round((${n.sql})::numeric, ${h(c).bind(d, 'int')})::float8`,
      type: T('Float', { nullable: n.type.nullable }),
    };
  },
});
for (const [name, sqlFn] of [
  ['floor', 'floor'],
  ['ceil', 'ceil'],
  ['abs', 'abs'],
] as const)
  fn([name], {
    arity: [1, 1],
    compile: (c, [x], node) => {
      const n = h(c).number(x!, node);
      return { sql: `${sqlFn}(${n.sql})`, type: n.type };
    },
  });

// Time, in the project's zone (or a toTimeZone's).
fn(['now'], {
  arity: [0, 0],
  compile: (c) => ({ sql: h(c).bind(h(c).now().toISOString(), 'timestamptz'), type: T('DateTime') }),
});
const localDay = (c: HogQLCompiler, offsetDays: number) => {
  const l = localOf(h(c).now(), h(c).timeZone());
  const d = new Date(Date.UTC(l.y, l.mo - 1, l.d + offsetDays));
  return { sql: h(c).bind(d.toISOString().slice(0, 10), 'date'), type: T('Date') };
};
fn(['today'], { arity: [0, 0], compile: (c) => localDay(c, 0) });
fn(['yesterday'], { arity: [0, 0], compile: (c) => localDay(c, -1) });
for (const [name, unit] of [
  ['toStartOfMinute', 'minute'],
  ['toStartOfHour', 'hour'],
  ['toStartOfDay', 'day'],
] as const)
  fn([name], {
    arity: [1, 1],
    compile: (c, [x], node) => {
      const t = h(c).time(x!, node);
      return {
        sql: `date_trunc('${unit}', ${t.sql}, ${h(c).zone(x!.type)})`,
        type: T('DateTime', { zone: x!.type.zone, nullable: t.type.nullable }),
      };
    },
  });
for (const [name, unit] of [
  ['toStartOfMonth', 'month'],
  ['toStartOfQuarter', 'quarter'],
  ['toStartOfYear', 'year'],
] as const)
  fn([name], {
    arity: [1, 1],
    compile: (c, [x], node) => ({
      sql: `date_trunc('${unit}', ${h(c).local(x!, node)})::date`,
      type: T('Date', { nullable: x!.type.nullable }),
    }),
  });
fn(['toStartOfWeek', 'toMonday'], {
  arity: [1, 2],
  compile: (c, [x, mode], node, { name }) => {
    // ClickHouse's default week starts on Sunday (mode 0); mode 1 and toMonday on Monday.
    const m = name === 'toMonday' ? 1 : (mode?.constant?.value ?? 0);
    if (m !== 0 && m !== 1) h(c).refuse(node, 'toStartOfWeek takes mode 0 (Sunday) or 1 (Monday)');
    const l = h(c).local(x!, node);
    const sql =
      m === 1
        ? `date_trunc('week', ${l})::date`
        : `(date_trunc('week', ${l} + interval '1 day') - interval '1 day')::date`;
    return { sql, type: T('Date', { nullable: x!.type.nullable }) };
  },
});
fn(['toDate'], {
  arity: [1, 1],
  compile: (c, [x], node) => {
    if (x!.type.kind === 'Date') return x!;
    return {
      sql: `(${h(c).local(x!, node)})::date`,
      type: T('Date', { nullable: x!.type.nullable || x!.type.kind === 'String' }),
    };
  },
});
fn(['toDateTime', 'parseDateTimeBestEffort', 'parseDateTimeBestEffortOrNull'], {
  arity: [1, 2],
  compile: (c, [x, zone], node) => {
    const t = h(c).time(x!, node);
    if (!zone) return t;
    return { ...t, type: { ...t.type, zone: timeZoneArg(c, zone, node) } };
  },
});
fn(['toTimeZone'], {
  arity: [2, 2],
  compile: (c, [x, zone], node) => {
    const t = h(c).time(x!, node);
    return { sql: t.sql, type: { ...t.type, zone: timeZoneArg(c, zone!, node) } };
  },
});
function timeZoneArg(c: HogQLCompiler, zone: Expr, node: Node): string {
  const z = zone.constant?.value;
  if (typeof z !== 'string') return h(c).refuse(node, 'the time zone must be a constant string');
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: z });
  } catch {
    return h(c).refuse(node, `unknown time zone ${z}`);
  }
  return z;
}
for (const [name, unit] of [
  ['toIntervalSecond', 'second'],
  ['toIntervalMinute', 'minute'],
  ['toIntervalHour', 'hour'],
  ['toIntervalDay', 'day'],
  ['toIntervalWeek', 'week'],
  ['toIntervalMonth', 'month'],
  ['toIntervalQuarter', 'quarter'],
  ['toIntervalYear', 'year'],
] as const)
  fn([name], {
    arity: [1, 1],
    compile: (c, [n], node) => {
      const v = h(c).number(n!, node);
      const one = unit === 'quarter' ? `interval '3 month'` : `interval '1 ${unit}'`;
      return { sql: `((${v.sql})::float8 * ${one})`, type: T('Interval') };
    },
  });
for (const [name, field] of [
  ['toYear', 'year'],
  ['toQuarter', 'quarter'],
  ['toMonth', 'month'],
  ['toDayOfMonth', 'day'],
  ['toDayOfWeek', 'isodow'],
  ['toHour', 'hour'],
  ['toMinute', 'minute'],
] as const)
  fn([name], {
    arity: [1, 1],
    compile: (c, [x], node) => ({
      sql: `extract(${field} FROM ${h(c).local(x!, node)})::int`,
      type: T('Int', { nullable: x!.type.nullable }),
    }),
  });
fn(['dateDiff', 'date_diff'], {
  arity: [3, 3],
  compile: (c, [unitArg, a, b], node) => {
    const unit = unitArg!.constant?.value;
    const units = ['second', 'minute', 'hour', 'day', 'week', 'month', 'quarter', 'year'];
    const u = typeof unit === 'string' ? unit.toLowerCase().replace(/s$/, '') : undefined;
    if (!u || !units.includes(u))
      return h(c).refuse(node, `dateDiff takes a constant unit: ${units.join(', ')}`);
    // Boundaries crossed between a and b, in the zone, as ClickHouse counts them.
    const epoch = (e: Expr) => `extract(epoch FROM ${h(c).time(e, node).sql})`;
    const la = h(c).local(a!, node);
    const lb = h(c).local(b!, node);
    const months = (l: string) => `(extract(year FROM ${l}) * 12 + extract(month FROM ${l}) - 1)`;
    const sql = {
      second: `(floor(${epoch(b!)}) - floor(${epoch(a!)}))`,
      minute: `(floor(${epoch(b!)} / 60) - floor(${epoch(a!)} / 60))`,
      hour: `(floor(${epoch(b!)} / 3600) - floor(${epoch(a!)} / 3600))`,
      day: `((${lb})::date - (${la})::date)`,
      week: `((date_trunc('week', ${lb})::date - date_trunc('week', ${la})::date) / 7)`,
      month: `(${months(lb)} - ${months(la)})`,
      quarter: `(floor(${months(lb)} / 3) - floor(${months(la)} / 3))`,
      year: `(extract(year FROM ${lb}) - extract(year FROM ${la}))`,
    }[u as 'day'];
    return { sql: `(${sql})::bigint`, type: T('Int', { nullable: true }) };
  },
});

/** The names of every function served, for the docs and errors. */
export const HOGQL_FUNCTIONS: readonly string[] = NAMES.sort();
