// Cohort filters of flags (`{type: "cohort", key: "id", value: <id>, operator: "in"|"not_in"}`),
// matched as PostHog's flag service matches them (rust/feature-flags cohorts): a property
// cohort's tree of AND/OR groups is matched against the person's properties, leaves may be
// negated or name other cohorts; a static cohort is matched by membership, which the caller
// looked up. A cohort that does not exist (deleted) makes the flag "could not be computed", as
// the Rust service answers CohortNotFound. Pure.
import { FlagEvaluationError } from './errors';
import { assertSupportedFilter, matchCheckedProperty } from './property-match';
import type { CohortDefinition, CohortPropertyGroup, EvaluationContext, PropertyFilter } from './types';

/** Cohorts nest this deep at most; deeper (or cyclic) trees cannot be computed. */
const MAX_COHORT_DEPTH = 32;

export function isCohortFilter(filter: PropertyFilter): boolean {
  return filter.type === 'cohort';
}

/** The cohort id a cohort filter names, or undefined when the value is not an id. */
export function cohortIdOf(filter: PropertyFilter): number | undefined {
  const id = typeof filter.value === 'string' ? Number(filter.value) : filter.value;
  return typeof id === 'number' && Number.isInteger(id) ? id : undefined;
}

/** Checked once per flag definition: a cohort filter needs an id and PostHog's operators. */
export function assertSupportedCohortFilter(filter: PropertyFilter): void {
  if (cohortIdOf(filter) === undefined)
    throw new FlagEvaluationError(`cohort filter needs a cohort id (${JSON.stringify(filter.value)})`);
  const operator = filter.operator ?? 'in';
  if (operator !== 'in' && operator !== 'not_in')
    throw new FlagEvaluationError(`unsupported cohort operator "${operator}"`);
}

/** Whether the person matches a flag's cohort filter (`not_in` inverts). */
export function matchCohortFilter(filter: PropertyFilter, ctx: EvaluationContext, now: Date): boolean {
  const inCohort = inCohortById(cohortIdOf(filter), ctx, now, new Set(), 0);
  return filter.operator === 'not_in' ? !inCohort : inCohort;
}

function inCohortById(
  id: number | undefined,
  ctx: EvaluationContext,
  now: Date,
  visiting: Set<number>,
  depth: number,
): boolean {
  const cohort = id === undefined ? undefined : ctx.cohorts?.get(id);
  if (!cohort || id === undefined) throw new FlagEvaluationError(`cohort ${String(id)} not found`);
  if (cohort.is_static) {
    if (!ctx.staticCohorts) throw new FlagEvaluationError(`static cohort ${id} membership unknown`);
    return ctx.staticCohorts.has(id);
  }
  if (visiting.has(id) || depth > MAX_COHORT_DEPTH)
    throw new FlagEvaluationError(`cohort ${id} refers to itself or nests too deep`);
  visiting.add(id);
  try {
    return matchGroup(cohortProperties(cohort), ctx, now, visiting, depth + 1);
  } finally {
    visiting.delete(id);
  }
}

/** A cohort's property tree (PostHog's `cohort.properties`); undefined when it has none. */
export function cohortProperties(cohort: CohortDefinition): CohortPropertyGroup | undefined {
  const props = cohort.filters && typeof cohort.filters === 'object' ? cohort.filters.properties : undefined;
  return props && typeof props === 'object' ? props : undefined;
}

function isGroup(value: unknown): value is CohortPropertyGroup {
  return !!value && typeof value === 'object' && Array.isArray((value as CohortPropertyGroup).values);
}

// posthog-node's matchPropertyGroup: an empty group matches; `property` is AND; a group's values
// are either all groups or all leaves; a leaf's negation inverts it.
function matchGroup(
  group: CohortPropertyGroup | undefined,
  ctx: EvaluationContext,
  now: Date,
  visiting: Set<number>,
  depth: number,
): boolean {
  if (depth > MAX_COHORT_DEPTH) throw new FlagEvaluationError('cohort properties nest too deep');
  if (!group || typeof group !== 'object' || Object.keys(group).length === 0) return true;
  const type = group.type === 'property' ? 'AND' : group.type;
  if (type !== 'AND' && type !== 'OR')
    throw new FlagEvaluationError(`unsupported cohort group type ${JSON.stringify(group.type)}`);
  const values = Array.isArray(group.values) ? group.values : [];
  if (values.length === 0) return type === 'AND';
  for (const value of values) {
    let matches: boolean;
    let negation = false;
    if (isGroup(value)) {
      matches = matchGroup(value, ctx, now, visiting, depth + 1);
    } else {
      const leaf = value as PropertyFilter;
      if (!leaf || typeof leaf !== 'object' || typeof leaf.key !== 'string')
        throw new FlagEvaluationError('cohort property needs a key');
      negation = leaf.negation === true;
      matches = matchLeaf(leaf, ctx, now, visiting, depth);
    }
    const effective = negation ? !matches : matches;
    if (type === 'AND' && !effective) return false;
    if (type === 'OR' && effective) return true;
  }
  return type === 'AND';
}

function matchLeaf(
  leaf: PropertyFilter,
  ctx: EvaluationContext,
  now: Date,
  visiting: Set<number>,
  depth: number,
): boolean {
  if (leaf.type === 'cohort') {
    assertSupportedCohortFilter(leaf);
    const inCohort = inCohortById(cohortIdOf(leaf), ctx, now, visiting, depth + 1);
    return leaf.operator === 'not_in' ? !inCohort : inCohort;
  }
  // Behavioural criteria ("performed event") are refused in flags, as PostHog refuses them.
  if (leaf.type !== 'person' && leaf.type !== undefined)
    throw new FlagEvaluationError(`cohort property of type ${JSON.stringify(leaf.type)} is not supported`);
  assertSupportedFilter(leaf);
  // A property the person lacks simply does not match (negative operators do), as in PostHog.
  return matchCheckedProperty(leaf, ctx.personProperties, now);
}

/**
 * What a set of flag cohort ids reaches through cohort references: every cohort id (static and
 * property-based), the person property keys their trees read, and whether a reference is
 * missing. Iterative and visited-once, so hostile trees cost their size.
 */
export function cohortClosure(
  ids: Iterable<number>,
  cohorts: ReadonlyMap<number, CohortDefinition>,
): { ids: Set<number>; staticIds: Set<number>; personKeys: Set<string>; missing: boolean } {
  const out = {
    ids: new Set<number>(),
    staticIds: new Set<number>(),
    personKeys: new Set<string>(),
    missing: false,
  };
  const pending = [...ids];
  while (pending.length > 0) {
    const id = pending.pop()!;
    if (out.ids.has(id)) continue;
    out.ids.add(id);
    const cohort = cohorts.get(id);
    if (!cohort) {
      out.missing = true;
      continue;
    }
    if (cohort.is_static) {
      out.staticIds.add(id);
      continue;
    }
    const groups: unknown[] = [cohortProperties(cohort)];
    while (groups.length > 0) {
      const node = groups.pop();
      if (isGroup(node)) {
        groups.push(...node.values!);
      } else if (node && typeof node === 'object') {
        const leaf = node as PropertyFilter;
        if (leaf.type === 'cohort') {
          const ref = cohortIdOf(leaf);
          if (ref === undefined) out.missing = true;
          else pending.push(ref);
        } else if (typeof leaf.key === 'string') {
          out.personKeys.add(leaf.key);
        }
      }
    }
  }
  return out;
}
