// Which stored properties a set of flags reads, so the decide service can skip the Postgres
// read when the request already carries them (or when no flag needs any).
import { cohortClosure, cohortIdOf } from './cohorts';
import { enrollmentPropertyKey } from './evaluate';
import type { CohortDefinition, FlagDefinition, PropertyFilter } from './types';

/**
 * Person property keys read by active flags, super conditions and enrollment included, and the
 * keys the property cohorts they name read (given the project's cohorts). Flag dependencies are
 * not followed: the caller unites the keys of a flag's dependencies.
 */
export function requiredPersonProperties(
  flags: FlagDefinition[],
  cohorts?: ReadonlyMap<number, CohortDefinition>,
): Set<string> {
  const keys = new Set<string>();
  for (const flag of live(flags)) {
    const aggregation = flag.filters.aggregation_group_type_index ?? null;
    if (flag.filters.feature_enrollment === true) keys.add(enrollmentPropertyKey(flag.key));
    // Enrollment (super) conditions always read person properties, even on group flags.
    for (const condition of flag.filters.super_groups?.slice(0, 1) ?? []) {
      for (const filter of condition.properties ?? []) keys.add(filter.key);
    }
    const cohortIds: number[] = [];
    for (const filter of conditionFilters(flag)) {
      if (filter.type === 'cohort') {
        const id = cohortIdOf(filter);
        if (id !== undefined) cohortIds.push(id);
        continue;
      }
      if (filter.type === 'flag') continue;
      if (groupIndexOf(filter, aggregation) === null) keys.add(filter.key);
    }
    if (cohorts && cohortIds.length > 0)
      for (const k of cohortClosure(cohortIds, cohorts).personKeys) keys.add(k);
  }
  return keys;
}

/** Group property keys read by active flags, per group type index. */
export function requiredGroupProperties(flags: FlagDefinition[]): Map<number, Set<string>> {
  const byGroup = new Map<number, Set<string>>();
  for (const flag of live(flags)) {
    const aggregation = flag.filters.aggregation_group_type_index ?? null;
    for (const filter of conditionFilters(flag)) {
      if (filter.type === 'cohort' || filter.type === 'flag') continue;
      const index = groupIndexOf(filter, aggregation);
      if (index === null) continue;
      let keys = byGroup.get(index);
      if (!keys) byGroup.set(index, (keys = new Set()));
      keys.add(filter.key);
    }
  }
  return byGroup;
}

function live(flags: FlagDefinition[]): FlagDefinition[] {
  return flags.filter(
    (flag) => flag && flag.active && !flag.deleted && flag.filters && typeof flag.filters === 'object',
  );
}

export function conditionFilters(flag: FlagDefinition): PropertyFilter[] {
  const groups = Array.isArray(flag.filters.groups) ? flag.filters.groups : [];
  return groups.flatMap((condition) => (Array.isArray(condition?.properties) ? condition.properties : []));
}

// Mirrors evaluate.ts propertiesFor: null means the filter reads person properties.
function groupIndexOf(filter: PropertyFilter, aggregation: number | null): number | null {
  if (filter.type === 'person') return null;
  if (filter.type === 'group') return filter.group_type_index ?? aggregation;
  return aggregation;
}
