// Limits on the values of property filters, shared by flag filters and cohort filters: each
// string's length, and a regex value's syntax and size (@sett/flags runs them on RE2 within
// MAX_REGEX_LENGTH and MAX_REGEX_PROGRAM). Pure; callers turn a problem into their 400.
import { regexProblem } from '@sett/flags';

/**
 * The longest string a filter value may hold (alone or in a list). PostHog sets none; values are
 * matched on every evaluation and travel in every flag definition decide loads and local
 * evaluation serves, so a value of megabytes costs every request of the project.
 */
export const MAX_FILTER_VALUE_LENGTH = 65_536;

/** Why a filter value (a string, or a list of them) is too long, or undefined. */
export function filterValueProblem(value: unknown): string | undefined {
  const strings = Array.isArray(value) ? value : [value];
  for (const s of strings)
    if (typeof s === 'string' && s.length > MAX_FILTER_VALUE_LENGTH)
      return `value is longer than ${MAX_FILTER_VALUE_LENGTH} characters (${s.length})`;
  return undefined;
}

/** A regex value's problem, as a sentence: RE2 syntax, or its size (@sett/flags' limits). */
export function describeRegexProblem(value: unknown): string | undefined {
  const problem = regexProblem(value);
  if (!problem) return undefined;
  return problem.startsWith('invalid regex')
    ? `${problem}; patterns use RE2 syntax, without lookarounds or backreferences`
    : problem;
}
