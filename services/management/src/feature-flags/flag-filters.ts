// Semantic checks of flag filters that JSON Schema cannot express (variant percentages summing
// to 100, payload keys, variant references), plus the early access enrollment super condition.
// Pure: the caller passes the project's group type indexes.
import { ValidationError } from '@sett/http';
import { enrollmentPropertyKey, type FlagConditionGroup, type FlagFilters } from '@sett/flags';

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
  const index = filters.aggregation_group_type_index;
  if (index !== undefined && index !== null && !groupTypeIndexes.has(index)) {
    throw new ValidationError(
      `Group type index ${index} does not exist in this project.`,
      'filters',
      'invalid_input',
    );
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
