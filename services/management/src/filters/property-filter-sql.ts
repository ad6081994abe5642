// PostHog's property filters (`?properties=` on the events and persons lists) as a parameterised
// SQL condition over a jsonb column, with the operators and semantics of flag matching
// (@sett/flags property-match.ts): exact compares as case-insensitive text (lists mean any of
// them, true/false by truthiness), the negative operators hold for an absent property, contains
// lowercases both sides, gt/gte/lt/lte compare as numbers when both sides are numbers and as
// text otherwise, dates are compared as instants (relative dates such as "-7d" resolved now).
// Regular expressions must be valid RE2 (as flags require) and run on Postgres' engine.
// Input is hostile: the filter JSON is parsed here with bounds on size, depth and leaf count,
// every value goes in as a bind parameter, and a key never becomes SQL text.
import { parseRelativeDate, PROPERTY_OPERATORS, regexProblem } from '@sett/flags';
import { ValidationError } from '@sett/http';

export type PropertyOperator = (typeof PROPERTY_OPERATORS)[number];
const OPERATORS: ReadonlySet<string> = new Set(PROPERTY_OPERATORS);
const MAX_DEPTH = 4;
const MAX_LEAVES = 50;
const FLOAT = /^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/;

export interface PropertyLeaf {
  key: string;
  value: unknown;
  operator: PropertyOperator;
  /** event or person */
  type: string;
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
  const type = f.type ?? types[0];
  if (typeof type !== 'string' || !types.includes(type))
    return refuse(
      attr,
      `filters of type ${JSON.stringify(type)} are not supported here (${types.join(', ')}).`,
    );
  const operator = f.operator ?? 'exact';
  if (typeof operator !== 'string' || !OPERATORS.has(operator))
    return refuse(attr, `unsupported operator ${JSON.stringify(operator)}.`);
  const needsValue = operator !== 'is_set' && operator !== 'is_not_set';
  if (needsValue && (f.value === undefined || f.value === null))
    return refuse(attr, `the filter on ${f.key} needs a value.`);
  if (needsValue && typeof f.value === 'object' && !Array.isArray(f.value))
    return refuse(attr, `the value of the filter on ${f.key} must be a string, number, boolean or list.`);
  if (operator === 'regex' || operator === 'not_regex') {
    const problem = regexProblem(f.value);
    if (problem) refuse(attr, `invalid regular expression on ${f.key}: ${problem}`);
  }
  return { key: f.key, value: f.value, operator: operator as PropertyOperator, type };
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

// An ISO date (optionally with a time and zone) that Postgres casts to timestamptz; anything
// else is not a date, so a date comparison does not hold for it (as flag matching says).
const ISO_DATE_SQL = `'^\\d{4}-\\d{2}-\\d{2}([ T]\\d{2}:\\d{2}(:\\d{2}(\\.\\d{1,6})?)?)?(Z|[+-]\\d{2}(:?\\d{2})?)?$'`;
const FLOAT_SQL = `'^[+-]?([0-9]+\\.?[0-9]*|\\.[0-9]+)([eE][+-]?[0-9]{1,2})?$'`;

function leafSql(f: PropertyLeaf, col: string, bind: (value: unknown) => string, now: Date): string {
  const key = bind(f.key);
  const present = `(${col} ? ${key})`;
  const text = `(${col} ->> ${key})`;
  switch (f.operator) {
    case 'is_set':
      return present;
    case 'is_not_set':
      return `NOT ${present}`;
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
      const expected = repr(f.value);
      // Numbers when both sides are numbers, else text, as flag matching compares.
      const numeric =
        typeof f.value === 'number' || FLOAT.test(expected)
          ? `WHEN ${text} ~ ${FLOAT_SQL} THEN (${text})::float8 ${op} ${bind(Number(expected))}::float8 `
          : '';
      return `(${present} AND ${text} IS NOT NULL AND CASE ${numeric}ELSE ${text} ${op} ${bind(expected)} END)`;
    }
    default: {
      const expected = typeof f.value === 'string' ? parseDate(f.value, now) : undefined;
      if (!expected) return 'FALSE';
      const op = { is_date_before: '<', is_date_after: '>', is_date_exact: '=' }[f.operator as string] ?? '=';
      return `(${present} AND CASE WHEN ${text} ~ ${ISO_DATE_SQL} THEN (${text})::timestamptz ${op} ${bind(expected)}::timestamptz ELSE FALSE END)`;
    }
  }
}

function exactSql(value: unknown, text: string, bind: (value: unknown) => string): string {
  if (isBooleanLike(value))
    return `(lower(COALESCE(${text}, '')) = 'true') = ${bind(isTruthy(value))}::boolean`;
  const candidates = (Array.isArray(value) ? value : [value]).map((v) => repr(v).toLowerCase());
  return `lower(COALESCE(${text}, 'null')) = ANY(${bind(candidates)}::text[])`;
}

/** An absolute or relative ("-7d", "-1h") date, as flag matching reads a filter's date. */
function parseDate(value: string, now: Date): string | undefined {
  const relative = parseRelativeDate(value, now);
  if (relative) return relative.toISOString();
  if (!/^\d{4}-\d{2}-\d{2}/.test(value)) return undefined;
  const date = new Date(value);
  return Number.isNaN(date.getTime()) ? undefined : date.toISOString();
}
