// Semantic checks of flag filters that JSON Schema cannot express (variant percentages summing
// to 100, payload keys, variant references, regular expressions decide can run), plus the early
// access enrollment super condition.
// Pure: the caller passes the project's group type indexes.
import { ValidationError } from '@sett/http';
import { enrollmentPropertyKey, type FlagConditionGroup, type FlagFilters } from '@sett/flags';
import {
  behaviouralDependency,
  flagReferences,
  hasCycle,
  type CohortDefinitionRow,
} from '../cohorts/cohort-filters';
import { describeRegexProblem, filterValueProblem } from '../filter-values';

/**
 * Cohort and flag properties of a flag must name live definitions of the same project:
 * `{type: "cohort", value: <cohort id>}` a cohort that is not deleted and depends on no cohort
 * with behavioural (event) criteria, as PostHog refuses those in flags (static cohorts stop
 * the walk: their members are a stored list); `{type: "flag", key: <flag id or key>, value:
 * true | false | "<variant>"}` another live flag, with no dependency cycle through any number
 * of flags. `flagId` is the flag being updated (undefined on create). Pure.
 */
export function checkFlagReferences(
  filters: FlagFilters,
  project: {
    flagId?: number;
    cohorts: ReadonlyMap<number, CohortDefinitionRow>;
    flags: ReadonlyArray<{ id: number; key: string; filters: FlagFilters }>;
  },
): void {
  const refs = flagReferences(filters);
  for (const ref of refs.cohorts) {
    const cohort = Number.isNaN(ref.id) ? undefined : project.cohorts.get(ref.id);
    if (!cohort)
      throw new ValidationError(
        `Cohort with id ${JSON.stringify(ref.raw)} does not exist in this project.`,
        'filters',
        'invalid_input',
      );
  }
  const behavioural = behaviouralDependency(
    refs.cohorts.map((r) => r.id),
    project.cohorts,
  );
  if (behavioural)
    throw new ValidationError(
      `Cohort '${behavioural.name}' with filters on events cannot be used in feature flags.`,
      'filters',
      'behavioral_cohort_found',
    );
  if (refs.flags.length === 0) return;
  const byId = new Map(project.flags.map((f) => [f.id, f]));
  const byKey = new Map(project.flags.map((f) => [f.key, f]));
  const resolve = (key: string) =>
    (/^[0-9]+$/.test(key) ? byId.get(Number(key)) : undefined) ?? byKey.get(key);
  for (const ref of refs.flags) {
    const target = resolve(ref.key);
    if (!target)
      throw new ValidationError(
        `Flag dependency "${ref.key}" does not name a feature flag of this project.`,
        'filters',
        'invalid_input',
      );
    if (typeof ref.value !== 'boolean' && typeof ref.value !== 'string')
      throw new ValidationError(
        `Flag dependency "${ref.key}" must have the value true, false or a variant key.`,
        'filters',
        'invalid_input',
      );
  }
  // 0 stands for a flag being created: it has no id yet and nothing refers to it.
  const self = project.flagId ?? 0;
  const refsOf = (id: number): number[] => {
    const f = id === self ? { filters } : byId.get(id);
    if (!f) return [];
    const out: number[] = [];
    for (const r of flagReferences(f.filters).flags) {
      const target = resolve(r.key);
      if (target) out.push(target.id);
    }
    return out;
  };
  if (hasCycle(self, refsOf))
    throw new ValidationError(
      'Filters are not valid (this flag would depend on itself through its flag dependencies).',
      'filters',
      'circular_dependency',
    );
}

export function checkFlagFilters(filters: FlagFilters, groupTypeIndexes: ReadonlySet<number>): void {
  const variants = filters.multivariate?.variants ?? [];
  const variantKeys = new Set<string>();
  for (const v of variants) {
    if (variantKeys.has(v.key)) {
      throw new ValidationError(`Variant key "${v.key}" is used more than once.`, 'filters', 'invalid_input');
    }
    variantKeys.add(v.key);
  }
  if (variants.length > 0) {
    // Percentages may be fractional; compare with a tolerance so 33.33+33.33+33.34 passes.
    const sum = variants.reduce((acc, v) => acc + v.rollout_percentage, 0);
    if (Math.abs(sum - 100) > 1e-9) {
      throw new ValidationError(
        'Invalid variant definitions: Variant rollout percentages must sum to 100.',
        'filters',
        'invalid_input',
      );
    }
  }
  for (const group of [...(filters.groups ?? []), ...(filters.super_groups ?? [])]) {
    if (group.variant !== undefined && group.variant !== null && !variantKeys.has(group.variant)) {
      throw new ValidationError(
        `Filters are not valid (variant override "${group.variant}" does not exist on the flag).`,
        'filters',
        'invalid_input',
      );
    }
  }
  for (const key of Object.keys(filters.payloads ?? {})) {
    const allowed = variants.length > 0 ? variantKeys.has(key) : key === 'true';
    if (!allowed) {
      const expected = variants.length > 0 ? 'a variant key' : '"true"';
      throw new ValidationError(`Payload key "${key}" must be ${expected}.`, 'filters', 'invalid_input');
    }
  }
  checkRegexFilters(filters);
  const index = filters.aggregation_group_type_index;
  if (index !== undefined && index !== null && !groupTypeIndexes.has(index)) {
    throw new ValidationError(
      `Group type index ${index} does not exist in this project.`,
      'filters',
      'invalid_input',
    );
  }
}

// Decide runs `regex` / `not_regex` values with RE2 semantics (linear time, no lookarounds or
// backreferences) and within a size (@sett/flags MAX_REGEX_LENGTH, MAX_REGEX_PROGRAM): a pattern
// it cannot run would leave the flag "could not be computed" for everyone, so it is refused here,
// naming the property, as is any value over MAX_FILTER_VALUE_LENGTH.
function checkRegexFilters(filters: FlagFilters): void {
  for (const group of [...(filters.groups ?? []), ...(filters.super_groups ?? [])]) {
    for (const filter of group.properties ?? []) {
      if (filter.value === undefined || filter.value === null) continue;
      const regex = filter.operator === 'regex' || filter.operator === 'not_regex';
      const problem =
        (regex ? describeRegexProblem(filter.value) : undefined) ?? filterValueProblem(filter.value);
      if (problem)
        throw new ValidationError(
          `Filters are not valid (property "${filter.key}": ${problem}).`,
          'filters',
          'invalid_input',
        );
    }
  }
}

/** PostHog's enrollment super condition: enrolled persons (`$feature_enrollment/<key>` = true) get the flag. */
export function enrollmentSuperGroups(flagKey: string): FlagConditionGroup[] {
  return [
    {
      properties: [
        { key: enrollmentPropertyKey(flagKey), type: 'person', operator: 'exact', value: ['true'] },
      ],
      rollout_percentage: 100,
    },
  ];
}

export function withEnrollment(filters: FlagFilters, flagKey: string): FlagFilters {
  return { ...filters, super_groups: enrollmentSuperGroups(flagKey) };
}

export function withoutEnrollment(filters: FlagFilters): FlagFilters {
  const { super_groups: _dropped, ...rest } = filters;
  return rest;
}

/** A flag key derived from a feature name: lower case, [a-z0-9-], never empty. */
export function slugifyKey(name: string): string {
  const slug = name
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 300);
  return slug || 'feature';
}

/** First of `base`, `base-2`, `base-3`, ... that is not taken. */
export function uniqueKey(base: string, taken: ReadonlySet<string>): string {
  if (!taken.has(base)) return base;
  for (let i = 2; ; i++) if (!taken.has(`${base}-${i}`)) return `${base}-${i}`;
}
