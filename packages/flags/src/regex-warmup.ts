// Compiling patterns a turn of the event loop at a time. Each pattern's compile is bounded
// (property-match.ts MAX_REGEX_LENGTH, MAX_REGEX_PROGRAM), but a flag may hold many patterns
// and a project many flags: compiled together in one request they would add up to a stall of
// every other request of the process. So management, before checking a flag or cohort it is
// saving, and decide, after loading a project's flag list, compile the patterns they have not
// met yet one per turn (other requests run between them); evaluation then finds them compiled.
import { cohortProperties } from './cohorts';
import { isRegexCompiled, regexProblem } from './property-match';
import type { CohortDefinition, CohortPropertyGroup, FlagFilters, PropertyFilter } from './types';

const isRegexFilter = (f: PropertyFilter | undefined): f is PropertyFilter =>
  !!f && (f.operator === 'regex' || f.operator === 'not_regex') && f.value !== undefined && f.value !== null;

/** The regex values of a flag's conditions and super conditions. */
export function flagRegexPatterns(filters: FlagFilters | undefined): unknown[] {
  const out: unknown[] = [];
  if (!filters || typeof filters !== 'object') return out;
  for (const groups of [filters.groups, filters.super_groups]) {
    if (!Array.isArray(groups)) continue;
    for (const group of groups)
      if (Array.isArray(group?.properties))
        for (const filter of group.properties) if (isRegexFilter(filter)) out.push(filter.value);
  }
  return out;
}

/** The regex values of a cohort property tree (`filters.properties`), walked without recursion
 * and at most `maxNodes` nodes far (trees are bounded when saved; this is for stored ones). */
export function cohortTreeRegexPatterns(tree: unknown, maxNodes = 100_000): unknown[] {
  const out: unknown[] = [];
  const stack: unknown[] = [tree];
  let seen = 0;
  while (stack.length > 0 && seen++ < maxNodes) {
    const node = stack.pop();
    if (!node || typeof node !== 'object') continue;
    const values = (node as CohortPropertyGroup).values;
    if (Array.isArray(values)) stack.push(...values);
    else if (isRegexFilter(node as PropertyFilter)) out.push((node as PropertyFilter).value);
  }
  return out;
}

/** The regex values of a project's flags and cohorts, as decide loads them. */
export function projectRegexPatterns(
  flags: ReadonlyArray<{ filters: FlagFilters }>,
  cohorts: Iterable<CohortDefinition>,
): unknown[] {
  const out = flags.flatMap((f) => flagRegexPatterns(f.filters));
  for (const cohort of cohorts) out.push(...cohortTreeRegexPatterns(cohortProperties(cohort)));
  return out;
}

const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

/**
 * Compiles (or refuses, remembering why) every pattern not met yet, one per turn of the event
 * loop. Resolves at once, without yielding, when there is none: the steady state costs a lookup
 * per pattern.
 */
export async function compileRegexesInTurns(patterns: Iterable<unknown>): Promise<void> {
  for (const pattern of patterns) {
    if (isRegexCompiled(pattern)) continue;
    regexProblem(pattern);
    await nextTurn();
  }
}
