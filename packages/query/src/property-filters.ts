// PostHog's property filters (`?properties=` on the events and persons lists) as a parameterised
// SQL condition over a jsonb column, with the operators and semantics of flag matching
// (@sett/flags property-match.ts): exact compares as case-insensitive text (lists mean any of
// them, true/false by truthiness), the negative operators hold for an absent property, contains
// lowercases both sides, gt/gte/lt/lte compare as numbers when both sides are numbers and as
// text otherwise, dates are compared as instants (relative dates such as "-7d" resolved now).
// Regular expressions must be valid RE2 (as flags require) and run on Postgres' engine; they
// are settled per request by checkFilterRegexes (budgeted, large ones off the event loop).
// Input is hostile: the filter JSON is parsed here with bounds on size, depth and leaf count,
// every value goes in as a bind parameter, and a key never becomes SQL text. Stored values are
// hostile too (anyone with the project token sends events): a value that looks like a number
// or a date is cast only when the cast cannot fail, so no stored value can make a filter error;
// a value Postgres could not hold simply does not match.
import { parseRelativeDate, PROPERTY_OPERATORS, regexProblem, type RegexChecker } from '@sett/flags';
import { ValidationError } from '@sett/http';

export type PropertyOperator = (typeof PROPERTY_OPERATORS)[number];
const OPERATORS: ReadonlySet<string> = new Set(PROPERTY_OPERATORS);
const MAX_DEPTH = 4;
const MAX_LEAVES = 50;

export interface PropertyLeaf {
  key: string;
  value: unknown;
  operator: PropertyOperator;
  /** event, person, or group_<n> (a group filter of group_type_index n) */
  type: string;
  /** The request field it came from, for errors found after parsing (regexes). */
  attr: string;
}

export interface PropertyGroup {
  type: 'AND' | 'OR';
  values: Array<PropertyLeaf | PropertyGroup>;
}

/** Where a property of a given type lives in the query: a jsonb SQL expression. */
export type PropertySource = Record<string, string>;

const refuse = (attr: string, detail: string): never => {
  throw new ValidationError(`${attr}: ${detail}`, attr, 'invalid_input');
};

/**
 * Parses `?properties=` (a JSON list of filters, all of which must hold, or an AND/OR group),
 * refusing what cannot be evaluated here (a type not in `types`, an unknown operator, an
 * invalid regular expression) with a 400 naming the parameter.
 */
export function parsePropertyFilters(raw: string, attr: string, types: readonly string[]): PropertyGroup {
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    return refuse(attr, 'not valid JSON.');
  }
  let leaves = 0;
  // Iterative: the client's JSON decides the shape, and its depth is bounded before it is walked.
  const root: PropertyGroup = { type: 'AND', values: [] };
  const stack: Array<{ node: unknown; into: PropertyGroup; depth: number }> = [];
  if (Array.isArray(parsed)) for (const n of parsed) stack.push({ node: n, into: root, depth: 1 });
  else if (isGroup(parsed)) stack.push({ node: parsed, into: root, depth: 1 });
  else refuse(attr, 'expected a list of property filters or a {type, values} group.');
  while (stack.length > 0) {
    const { node, into, depth } = stack.pop()!;
    if (depth > MAX_DEPTH) refuse(attr, `groups nest deeper than ${MAX_DEPTH} levels.`);
    if (isGroup(node)) {
      const group: PropertyGroup = { type: node.type === 'OR' ? 'OR' : 'AND', values: [] };
      into.values.push(group);
      for (const n of node.values) stack.push({ node: n, into: group, depth: depth + 1 });
      continue;
    }
    if (++leaves > MAX_LEAVES) refuse(attr, `at most ${MAX_LEAVES} filters.`);
    into.values.push(parseLeaf(node, attr, types));
  }
  return root;
}

function isGroup(node: unknown): node is { type: string; values: unknown[] } {
  const n = node as { type?: unknown; values?: unknown };
  return (
    typeof node === 'object' &&
    node !== null &&
    (n.type === 'AND' || n.type === 'OR') &&
    Array.isArray(n.values)
  );
}

function parseLeaf(node: unknown, attr: string, types: readonly string[]): PropertyLeaf {
  if (typeof node !== 'object' || node === null || Array.isArray(node))
    return refuse(attr, 'each filter must be an object {key, value, operator, type}.');
  const f = node as Record<string, unknown>;
  if (typeof f.key !== 'string' || f.key === '' || f.key.length > 400)
    return refuse(attr, 'each filter needs a key (a string of 1 to 400 characters).');
  const given = f.type ?? types[0];
  if (typeof given !== 'string' || !types.includes(given))
    return refuse(
      attr,
      `filters of type ${JSON.stringify(given)} are not supported here (${types.join(', ')}).`,
    );
  let type: string = given;
  // A group's property: the group of that type the event belongs to (its source is `group_<n>`).
  if (type === 'group') {
    const index = f.group_type_index;
    if (typeof index !== 'number' || !Number.isInteger(index) || index < 0 || index > 4)
      return refuse(attr, `the group filter on ${f.key} needs a group_type_index from 0 to 4.`);
    type = `group_${index}`;
  }
  const operator = f.operator ?? 'exact';
  if (typeof operator !== 'string' || !OPERATORS.has(operator))
    return refuse(attr, `unsupported operator ${JSON.stringify(operator)}.`);
  const needsValue = operator !== 'is_set' && operator !== 'is_not_set';
  if (needsValue && (f.value === undefined || f.value === null))
    return refuse(attr, `the filter on ${f.key} needs a value.`);
  if (needsValue && typeof f.value === 'object' && !Array.isArray(f.value))
    return refuse(attr, `the value of the filter on ${f.key} must be a string, number, boolean or list.`);
  if (DATE_OPERATORS.has(operator) && (typeof f.value !== 'string' || !parseDate(f.value, new Date())))
    refuse(
      attr,
      `the value of the ${operator} filter on ${f.key} must be a date (YYYY-MM-DD, with a time if wanted, years 0001 to 9999) or a relative date such as -7d.`,
    );
  return { key: f.key, value: f.value, operator: operator as PropertyOperator, type, attr };
}

const DATE_OPERATORS: ReadonlySet<string> = new Set(['is_date_before', 'is_date_after', 'is_date_exact']);
const isRegex = (leaf: PropertyLeaf) => leaf.operator === 'regex' || leaf.operator === 'not_regex';

function leavesOf(group: PropertyGroup): PropertyLeaf[] {
  const out: PropertyLeaf[] = [];
  const stack: Array<PropertyLeaf | PropertyGroup> = [group];
  while (stack.length > 0) {
    const node = stack.pop()!;
    if ('values' in node) stack.push(...node.values);
    else out.push(node);
  }
  return out;
}

/** The regex patterns of parsed filter groups, each with the filter it belongs to. */
export function filterRegexes(groups: Array<PropertyGroup | undefined>): PropertyLeaf[] {
  return groups.flatMap((g) => (g ? leavesOf(g).filter(isRegex) : []));
}

/** A regular expression of a request, with the field and key it is named by in errors. */
export interface RequestPattern {
  pattern: string;
  attr: string;
  key: string;
}

/** The patterns of filter groups, as settlePatterns takes them. */
export function filterPatterns(groups: Array<PropertyGroup | undefined>): RequestPattern[] {
  return filterRegexes(groups).map((l) => ({ pattern: repr(l.value), attr: l.attr, key: l.key }));
}

/**
 * Settles every pattern of one request within its one budget (RegexChecker: small ones on the
 * event loop a turn at a time, large ones in a worker thread), then refuses the first that is not
 * valid RE2 with a 400 naming its field and key.
 */
export async function settlePatterns(patterns: RequestPattern[], regexes: RegexChecker): Promise<void> {
  if (patterns.length === 0) return;
  const problem = await regexes.prepare(patterns.map((p) => p.pattern));
  if (problem) refuse(patterns[0]!.attr, `${problem}.`);
  for (const p of patterns) {
    const invalid = regexProblem(p.pattern);
    if (invalid) refuse(p.attr, `invalid regular expression on ${p.key}: ${invalid}`);
  }
}

/** settlePatterns for the regexes of filter groups alone. */
export async function checkFilterRegexes(
  groups: Array<PropertyGroup | undefined>,
  regexes: RegexChecker,
): Promise<void> {
  await settlePatterns(filterPatterns(groups), regexes);
}

/** parsePropertyFilters and checkFilterRegexes together, for a request with one filter parameter. */
export async function readPropertyFilters(
  raw: string,
  attr: string,
  types: readonly string[],
  regexes: RegexChecker,
): Promise<PropertyGroup> {
  const group = parsePropertyFilters(raw, attr, types);
  await checkFilterRegexes([group], regexes);
  return group;
}

/** A query node's filters (a list or an AND/OR group), parsed; undefined when absent or empty. */
export function nodeFilters(
  raw: unknown,
  attr: string,
  types: readonly string[] = ['event', 'person'],
): PropertyGroup | undefined {
  if (raw === undefined || raw === null || (Array.isArray(raw) && raw.length === 0)) return undefined;
  return parsePropertyFilters(JSON.stringify(raw), attr, types);
}

/** Two filter groups that must both hold, as one (either may be absent). */
export function combine(
  a: PropertyGroup | undefined,
  b: PropertyGroup | undefined,
): PropertyGroup | undefined {
  if (!a) return b;
  if (!b) return a;
  return { type: 'AND', values: [a, b] };
}

/**
 * The SQL condition of a parsed filter group. `bind` adds a parameter and returns its
 * placeholder; `sources` maps each filter type to its jsonb expression.
 */
export function propertyFilterSql(
  group: PropertyGroup,
  sources: PropertySource,
  bind: (value: unknown) => string,
  now: Date = new Date(),
): string {
  const parts = group.values.map((v) =>
    'values' in v ? propertyFilterSql(v, sources, bind, now) : leafSql(v, sources[v.type]!, bind, now),
  );
  if (parts.length === 0) return 'TRUE';
  return `(${parts.join(group.type === 'OR' ? ' OR ' : ' AND ')})`;
}

function repr(value: unknown): string {
  return typeof value === 'string' ? value : (JSON.stringify(value) ?? 'null');
}

function isBooleanLike(value: unknown): boolean {
  if (typeof value === 'boolean') return true;
  if (typeof value === 'string') return ['true', 'false'].includes(value.toLowerCase());
  if (Array.isArray(value)) return value.length > 0 && value.every(isBooleanLike);
  return false;
}

function isTruthy(value: unknown): boolean {
  if (typeof value === 'boolean') return value;
  if (typeof value === 'string') return value.toLowerCase() === 'true';
  if (Array.isArray(value)) return value.every(isTruthy);
  return false;
}

// A number Postgres' numeric holds exactly: at most 2,000 characters and a three-digit exponent
// (far inside its limits), so the cast of a matching value cannot fail; longer ones compare as
// text. (Postgres' regexes count repeats to 255, hence the length apart.)
const MAX_NUMERIC_LENGTH = 2000;
const NUMERIC_JS = /^[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]{1,3})?$/;
const NUMERIC_SQL = `'^[+-]?([0-9]+(\\.[0-9]*)?|\\.[0-9]+)([eE][+-]?[0-9]{1,3})?$'`;
const isNumeric = (text: string) => text.length <= MAX_NUMERIC_LENGTH && NUMERIC_JS.test(text);
// An ISO date, optionally with a time and an offset, in the years 0001-9999 with a valid month,
// hour, minute and second: with the day checked against its month (below), every value this
// matches casts to timestamptz.
const ISO_DATE_SQL =
  `'^(000[1-9]|00[1-9][0-9]|0[1-9][0-9]{2}|[1-9][0-9]{3})-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])` +
  `([ T]([01][0-9]|2[0-3]):[0-5][0-9](:[0-5][0-9](\\.[0-9]{1,6})?)?)?(Z|[+-](0[0-9]|1[0-5])(:?[0-5][0-9])?)?$'`;

/**
 * `then` when `text` is an ISO date that casts as written (ISO_DATE_SQL, its day checked against
 * its month), else null. Nested CASEs, not AND: SQL does not promise the order of AND's
 * operands, and the day's cast fails on other text.
 */
export function whenIsoDateSql(text: string, then: string): string {
  return `CASE WHEN ${text} ~ ${ISO_DATE_SQL} THEN CASE WHEN substr(${text}, 9, 2)::int <= ${lastDaySql(text)} THEN ${then} END END`;
}

/** The last day of the value's month (for a value ISO_DATE_SQL matched). */
function lastDaySql(text: string): string {
  const y = `substr(${text}, 1, 4)::int`;
  return `CASE substr(${text}, 6, 2) WHEN '02' THEN CASE WHEN (${y} % 4 = 0 AND ${y} % 100 <> 0) OR ${y} % 400 = 0 THEN 29 ELSE 28 END WHEN '04' THEN 30 WHEN '06' THEN 30 WHEN '09' THEN 30 WHEN '11' THEN 30 ELSE 31 END`;
}

// Parameters are bound only where the SQL uses them: Postgres refuses a statement with a
// parameter it cannot type (an unused one), which is a bug, not the client's fault.
function leafSql(f: PropertyLeaf, col: string, bind: (value: unknown) => string, now: Date): string {
  const key = () => bind(f.key);
  const presentWith = (k: string) => `(${col} ? ${k})`;
  switch (f.operator) {
    case 'is_set':
      return presentWith(key());
    case 'is_not_set':
      return `NOT ${presentWith(key())}`;
  }
  const k = key();
  const present = presentWith(k);
  const text = `(${col} ->> ${k})`;
  switch (f.operator) {
    case 'exact':
      return `(${present} AND ${exactSql(f.value, text, bind)})`;
    case 'is_not':
      return `(NOT ${present} OR NOT ${exactSql(f.value, text, bind)})`;
    case 'icontains':
      return `(${present} AND strpos(lower(COALESCE(${text}, 'null')), ${bind(repr(f.value).toLowerCase())}) > 0)`;
    case 'not_icontains':
      return `(NOT ${present} OR strpos(lower(COALESCE(${text}, 'null')), ${bind(repr(f.value).toLowerCase())}) = 0)`;
    case 'regex':
      return `(${present} AND COALESCE(${text}, 'null') ~ ${bind(repr(f.value))})`;
    case 'not_regex':
      return `(NOT ${present} OR COALESCE(${text}, 'null') !~ ${bind(repr(f.value))})`;
    case 'gt':
    case 'gte':
    case 'lt':
    case 'lte': {
      const op = { gt: '>', gte: '>=', lt: '<', lte: '<=' }[f.operator];
      const expected = typeof f.value === 'number' ? String(f.value) : repr(f.value);
      // Numbers when both sides are numbers, else text, as flag matching compares.
      if (!isNumeric(expected))
        return `(${present} AND ${text} IS NOT NULL AND ${text} ${op} ${bind(expected)})`;
      return `(${present} AND ${text} IS NOT NULL AND CASE WHEN length(${text}) <= ${MAX_NUMERIC_LENGTH} AND ${text} ~ ${NUMERIC_SQL} THEN (${text})::numeric ${op} ${bind(expected)}::numeric ELSE ${text} ${op} ${bind(expected)} END)`;
    }
    default: {
      // parseLeaf refused values that are not dates.
      const expected = parseDate(String(f.value), now)!;
      const op = { is_date_before: '<', is_date_after: '>', is_date_exact: '=' }[f.operator as string] ?? '=';
      return `(${present} AND coalesce(${whenIsoDateSql(text, `(${text})::timestamptz ${op} ${bind(expected)}::timestamptz`)}, FALSE))`;
    }
  }
}

function exactSql(value: unknown, text: string, bind: (value: unknown) => string): string {
  if (isBooleanLike(value))
    return `(lower(COALESCE(${text}, '')) = 'true') = ${bind(isTruthy(value))}::boolean`;
  const candidates = (Array.isArray(value) ? value : [value]).map((v) => repr(v).toLowerCase());
  return `lower(COALESCE(${text}, 'null')) = ANY(${bind(candidates)}::text[])`;
}

function daysInMonth(y: number, mo: number): number {
  if (mo < 1 || mo > 12) return 0;
  if (mo === 2) return (y % 4 === 0 && y % 100 !== 0) || y % 400 === 0 ? 29 : 28;
  return [4, 6, 9, 11].includes(mo) ? 30 : 31;
}

const MIN_DATE_MS = Date.parse('0001-01-01T00:00:00.000Z');
const MAX_DATE_MS = Date.parse('9999-12-31T23:59:59.999Z');

/** An absolute or relative ("-7d", "-1h") date, as flag matching reads a filter's date, in the
 * years Postgres and JavaScript agree on (0001-9999); undefined otherwise. */
function parseDate(value: string, now: Date): string | undefined {
  const relative = parseRelativeDate(value, now);
  const ymd = /^(\d{4})-(\d{2})-(\d{2})/.exec(value);
  // JavaScript rolls 2024-02-30 over to March; a date filter's value is a real day or nothing.
  if (
    !relative &&
    (!ymd || Number(ymd[3]) < 1 || Number(ymd[3]) > daysInMonth(Number(ymd[1]), Number(ymd[2])))
  )
    return undefined;
  const date = relative ?? new Date(value);
  const ms = date.getTime();
  return Number.isNaN(ms) || ms < MIN_DATE_MS || ms > MAX_DATE_MS ? undefined : date.toISOString();
}
