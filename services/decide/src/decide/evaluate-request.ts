// Step 2 of a flag evaluation request: the flags evaluated against what gather-inputs.ts read.
// Pure: no I/O, no metrics, no logging; what the caller should count or log comes back with the
// result. Flags whose inputs could not be read are left out and reported.
import { evaluateFlags, type EvaluationContext, type FlagDefinition, type FlagResult } from '@sett/flags';
import { groupCacheKey } from '../persons/person-store';
import type { DecideInput, GatheredInputs } from './gather-inputs';
import type { EvaluationOutcome } from './response-format';

export interface EvaluatedRequest {
  outcome: EvaluationOutcome;
  /** Flags left out because a lookup they needed failed. */
  leftOut: number;
  /** Flags that could not be computed (malformed filters and the like). */
  errors: Array<{ flagKey: string; message: string }>;
}

type Ready = Extract<GatheredInputs, { kind: 'ready' }>;

export function evaluateRequest(input: DecideInput, gathered: Ready, at: Date): EvaluatedRequest {
  const { project, person, overrides } = gathered;
  const ctx: EvaluationContext = {
    distinctId: input.distinctId,
    personProperties: person ? { ...person.properties, ...overrides } : overrides,
    groups: input.groups,
    groupProperties: groupPropertiesOf(input, gathered),
    groupTypeMapping: project.groupTypes,
    hashKeyOverrides: gathered.hashKeyOverrides,
    now: at,
    cohorts: project.cohorts,
    staticCohorts: gathered.staticCohorts,
    dependencyFlags: project.definitions,
  };
  const { flags, leftOut } = computableFlags(gathered);
  const errors: EvaluatedRequest['errors'] = [];
  const result = evaluateFlags(flags, ctx, (flagKey, error) =>
    errors.push({ flagKey, message: error.message }),
  );
  return {
    outcome: {
      flags: result.flags as Record<string, FlagResult>,
      errorsWhileComputingFlags: result.errorsWhileComputingFlags || leftOut > 0,
      quotaLimited: false,
    },
    leftOut,
    errors,
  };
}

/** The request's group properties, over the stored ones key by key (the request's win). */
function groupPropertiesOf(input: DecideInput, gathered: Ready): Record<string, Record<string, unknown>> {
  // No prototype: a group type named `__proto__` is an entry, not the object's prototype.
  const out = Object.create(null) as Record<string, Record<string, unknown>>;
  for (const [name, props] of Object.entries(input.groupProperties)) out[name] = props;
  for (const ref of gathered.groupRefs) {
    const name = gathered.project.groupTypes[ref.groupTypeIndex]!;
    const stored = gathered.storedGroups.get(groupCacheKey(ref));
    if (stored) out[name] = { ...stored, ...(input.groupProperties[name] ?? {}) };
  }
  return out;
}

/** The flags whose inputs were all read; the rest are counted as left out. */
function computableFlags({ project, failed, overrides }: Ready): {
  flags: FlagDefinition[];
  leftOut: number;
} {
  if (!failed.person && failed.groups.size === 0 && !failed.continuity && !failed.cohorts)
    return { flags: project.flags, leftOut: 0 };
  let leftOut = 0;
  const flags = project.prepared
    .filter(({ flag, personKeys, groupIndexes, staticCohorts }) => {
      const broken =
        (failed.person && personKeys.some((k) => !Object.hasOwn(overrides, k))) ||
        groupIndexes.some((i) => failed.groups.has(i)) ||
        (failed.continuity && flag.ensure_experience_continuity) ||
        (failed.cohorts && staticCohorts.length > 0);
      if (broken) leftOut++;
      return !broken;
    })
    .map((p) => p.flag);
  return { flags, leftOut };
}
