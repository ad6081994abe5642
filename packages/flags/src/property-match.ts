// Matching one property filter against a property bag, with the semantics of PostHog's flag
// service (rust/feature-flags properties/property_matching.rs) when every property of the
// person or group is known: an absent property is simply absent, never "inconclusive".
import { RE2JS } from 're2js';
import { estimateRegexProgram } from './regex-cost';
import { parseDateString, parsePropertyDate } from './dates';
import { FlagEvaluationError } from './errors';
import type { PropertyFilter } from './types';

/** Every person/group property operator evaluation supports (management validates against it). */
export const PROPERTY_OPERATORS = [
  'exact',
  'is_not',
  'is_set',
  'is_not_set',
  'icontains',
  'not_icontains',
  'regex',
  'not_regex',
  'gt',
  'gte',
  'lt',
  'lte',
  'is_date_before',
  'is_date_after',
  'is_date_exact',
] as const;
const OPERATORS: ReadonlySet<string> = new Set(PROPERTY_OPERATORS);

// Rust's str::parse::<f64> grammar, so "10" compares as a number and "10abc" does not.
const FLOAT = /^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/;

/**
 * Throws FlagEvaluationError when the filter can never be evaluated here: cohort and flag
 * dependency filters, unknown operators, invalid regular expressions. Checked for the whole flag
 * up front so that whether a flag errors does not depend on who is asking.
 */
export function assertSupportedFilter(filter: PropertyFilter): void {
  if (filter.type === 'cohort')
    throw new FlagEvaluationError(`cohort filters are not supported (${filter.key})`);
  if (filter.type === 'flag')
    throw new FlagEvaluationError(`flag dependency filters are not supported (${filter.key})`);
  const operator = filter.operator ?? 'exact';
  if (!OPERATORS.has(operator))
    throw new FlagEvaluationError(`unsupported operator "${operator}" on ${filter.key}`);
  if ((operator === 'regex' || operator === 'not_regex') && filter.value != null) compileRegex(filter.value);
}

export function matchProperty(
  filter: PropertyFilter,
  properties: Record<string, unknown>,
  now: Date,
): boolean {
  assertSupportedFilter(filter);
  return matchCheckedProperty(filter, properties, now);
}

/**
 * matchProperty for a filter already accepted by assertSupportedFilter (evaluate.ts checks every
 * filter of a flag once per definition, so the per-request path skips the check).
 */
export function matchCheckedProperty(
  filter: PropertyFilter,
  properties: Record<string, unknown>,
  now: Date,
): boolean {
  const operator = filter.operator ?? 'exact';
  const present = Object.prototype.hasOwnProperty.call(properties, filter.key);

  // A key set to null still counts as set, as in PostHog (it checks key presence).
  if (operator === 'is_set') return present;
  if (operator === 'is_not_set') return !present;

  // Every other operator needs a filter value; without one nothing matches.
  const expected = filter.value;
  if (expected === undefined || expected === null) return false;
  const actual = properties[filter.key];

  switch (operator) {
    case 'exact':
      return present && exactMatch(expected, actual);
    // The negative operators match an absent property: "is not X" holds when there is no value.
    case 'is_not':
      return !present || !exactMatch(expected, actual);
    case 'icontains':
      return present && asciiLower(repr(actual)).includes(asciiLower(repr(expected)));
    case 'not_icontains':
      return !present || !asciiLower(repr(actual)).includes(asciiLower(repr(expected)));
    case 'regex':
      return present && compileRegex(expected).test(repr(actual));
    case 'not_regex':
      return !present || !compileRegex(expected).test(repr(actual));
    case 'gt':
    case 'gte':
    case 'lt':
    case 'lte':
      return present && actual !== null && compareOrdered(operator, actual, expected);
    default:
      return present && matchDate(operator, actual, expected, now);
  }
}

// PostHog's exact match: boolean-like filter values compare by truthiness ("True" == true),
// lists mean any-of, everything else compares as case-insensitive text.
function exactMatch(expected: unknown, actual: unknown): boolean {
  if (isBooleanLike(expected)) return isTruthy(actual) === isTruthy(expected);
  const target = repr(actual).toLowerCase();
  if (Array.isArray(expected)) return expected.some((candidate) => repr(candidate).toLowerCase() === target);
  return repr(expected).toLowerCase() === target;
}

function isBooleanLike(value: unknown): boolean {
  if (typeof value === 'boolean') return true;
  if (typeof value === 'string') return ['true', 'false'].includes(value.toLowerCase());
  if (Array.isArray(value)) return value.every(isBooleanLike);
  return false;
}

function isTruthy(value: unknown): boolean {
  if (typeof value === 'boolean') return value;
  if (typeof value === 'string') return value.toLowerCase() === 'true';
  if (Array.isArray(value)) return value.every(isTruthy);
  return false;
}

// Numeric comparison when both sides are numbers (or numeric strings); otherwise text order,
// as PostHog's SDK local evaluation does.
function compareOrdered(operator: 'gt' | 'gte' | 'lt' | 'lte', actual: unknown, expected: unknown): boolean {
  const a = toNumber(actual);
  const e = toNumber(expected);
  if (Number.isFinite(a) && Number.isFinite(e)) return compare(operator, a, e);
  return compare(operator, repr(actual), repr(expected));
}

function compare<T extends number | string>(operator: 'gt' | 'gte' | 'lt' | 'lte', lhs: T, rhs: T): boolean {
  if (operator === 'gt') return lhs > rhs;
  if (operator === 'gte') return lhs >= rhs;
  if (operator === 'lt') return lhs < rhs;
  return lhs <= rhs;
}

function toNumber(value: unknown): number {
  if (typeof value === 'number') return value;
  if (typeof value === 'string' && FLOAT.test(value)) return Number(value);
  return NaN;
}

function matchDate(operator: string, actual: unknown, expected: unknown, now: Date): boolean {
  // Unparseable dates on either side are a non-match, not an error, as in PostHog's service.
  if (typeof expected !== 'string') return false;
  const actualDate = parsePropertyDate(actual, now);
  const expectedDate = parseDateString(expected, now);
  if (!actualDate || !expectedDate) return false;
  const a = actualDate.getTime();
  const e = expectedDate.getTime();
  if (operator === 'is_date_before') return a < e;
  if (operator === 'is_date_after') return a > e;
  return a === e;
}

// Flag patterns are written by project members and run against request-supplied values on the
// one event loop every project shares, so they run on RE2 semantics (re2js, a pure JavaScript
// port of RE2): time linear in the value's length whatever the pattern, no backtracking. It is
// the syntax of PostHog's Rust flag service (the `regex` crate): `(?i)`, `(?P<name>...)`,
// `(?<name>...)`, `\d`, classes; lookarounds and backreferences do not exist there and a pattern
// using them is invalid (management refuses it; one already stored errors its flag).
/** Matches a pattern anywhere in the text, like Python's re.search. */
export interface CompiledRegex {
  test(text: string): boolean;
}

/** The longest pattern compiled (longer ones are refused when a flag is saved, and fail
 * evaluation without being compiled). */
export const MAX_REGEX_LENGTH = 4096;
/** The most instructions a compiled pattern may have: compiling and matching cost grow with it. */
export const MAX_REGEX_PROGRAM = 4096;
/** Patterns whose estimated program is larger are not even compiled (regex-cost.ts). The
 * estimate may overshoot RE2's count a little (alternations of single characters, say), so it
 * gets headroom, and the compiled program's own size decides. */
const MAX_REGEX_ESTIMATE = 2 * MAX_REGEX_PROGRAM;

// Compiled patterns by source text (or the error compiling it gave). Flag definitions hold few
// distinct patterns and are evaluated on every request: compile each once. A compiled RE2JS
// keeps no state between test() calls, so sharing one is safe. Bounded: cleared when full.
const REGEX_CACHE_MAX = 1000;
const regexCache = new Map<string, CompiledRegex | FlagEvaluationError>();

function compileRegex(pattern: unknown): CompiledRegex {
  const text = repr(pattern);
  // Checked before the cache too: a pattern this long is never kept as a key.
  if (text.length > MAX_REGEX_LENGTH)
    throw new FlagEvaluationError(`regex is longer than ${MAX_REGEX_LENGTH} characters (${text.length})`);
  let compiled = regexCache.get(text);
  if (compiled === undefined) {
    compiled = compileBounded(text);
    if (regexCache.size >= REGEX_CACHE_MAX) regexCache.clear();
    regexCache.set(text, compiled);
  }
  if (compiled instanceof FlagEvaluationError) throw compiled;
  return compiled;
}

function tooLarge(instructions: number): FlagEvaluationError {
  return new FlagEvaluationError(
    `regex is too large: it compiles to about ${instructions} instructions, at most ${MAX_REGEX_PROGRAM} are allowed (counted repeats such as {999} multiply what they repeat)`,
  );
}

/** Why a pattern is refused before compiling it (its estimated program is too large), or undefined. */
export function regexEstimateProblem(text: string): string | undefined {
  if (text.length > MAX_REGEX_LENGTH)
    return `regex is longer than ${MAX_REGEX_LENGTH} characters (${text.length})`;
  const estimate = estimateRegexProgram(text);
  return estimate > MAX_REGEX_ESTIMATE ? tooLarge(Math.round(estimate)).message : undefined;
}

function compileBounded(text: string): CompiledRegex | FlagEvaluationError {
  const refused = regexEstimateProblem(text);
  if (refused) return new FlagEvaluationError(refused);
  let compiled: RE2JS;
  try {
    compiled = RE2JS.compile(text);
  } catch (err) {
    return new FlagEvaluationError(compileErrorMessage(text, err));
  }
  const instructions = compiled.programSize();
  return instructions > MAX_REGEX_PROGRAM ? tooLarge(instructions) : compiled;
}

function compileErrorMessage(text: string, err: unknown): string {
  return `invalid regex ${JSON.stringify(text)}: ${err instanceof Error ? err.message : String(err)}`;
}

/**
 * What compiling a pattern elsewhere found (a worker thread, regex-checker.ts): its program size,
 * or the compiler's error message. Remembered as if compiled here, so that regexProblem answers
 * without compiling; a valid pattern is compiled here only if it is ever evaluated.
 */
export function rememberRegexVerdict(pattern: unknown, found: { size?: number; error?: string }): void {
  const text = repr(pattern);
  if (text.length > MAX_REGEX_LENGTH || regexCache.has(text)) return;
  let verdict: CompiledRegex | FlagEvaluationError;
  if (found.error !== undefined) verdict = new FlagEvaluationError(compileErrorMessage(text, found.error));
  else if ((found.size ?? 0) > MAX_REGEX_PROGRAM) verdict = tooLarge(found.size!);
  else {
    let compiled: RE2JS | undefined;
    verdict = { test: (value: string) => (compiled ??= RE2JS.compile(text)).test(value) };
  }
  if (regexCache.size >= REGEX_CACHE_MAX) regexCache.clear();
  regexCache.set(text, verdict);
}

/** Whether this process has compiled the pattern (or refused it) already: using it costs no compile. */
export function isRegexCompiled(pattern: unknown): boolean {
  const text = repr(pattern);
  return text.length > MAX_REGEX_LENGTH || regexCache.has(text);
}

/**
 * Why a `regex` / `not_regex` filter value cannot be evaluated (not valid RE2 syntax, e.g. a
 * lookahead or a backreference), or undefined when it can. For validating flags when saved.
 */
export function regexProblem(pattern: unknown): string | undefined {
  try {
    compileRegex(pattern);
    return undefined;
  } catch (err) {
    return (err as Error).message;
  }
}

// How PostHog turns a JSON value into text for comparison: strings as they are, anything else
// as compact JSON (true -> "true", 5 -> "5", null -> "null", ["a"] -> '["a"]').
function repr(value: unknown): string {
  if (typeof value === 'string') return value;
  return JSON.stringify(value) ?? 'null';
}

// PostHog lowercases only ASCII letters for the contains operators.
function asciiLower(value: string): string {
  return value.replace(/[A-Z]/g, (c) => c.toLowerCase());
}
