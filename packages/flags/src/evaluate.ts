// Evaluation of flag definitions for one person (or group), following PostHog's
// FeatureFlagMatcher.get_match (posthog/models/feature_flag/flag_matching.py and its Rust
// successor rust/feature-flags flags/flag_matching.rs). Pure: everything comes in through the
// definitions and the context.
import { assertSupportedCohortFilter, matchCohortFilter } from './cohorts';
import { FlagEvaluationError } from './errors';
import { flagHash } from './hash';
import { assertSupportedFilter, matchCheckedProperty } from './property-match';
import { outranks, reason } from './reasons';
import { variantLookupTable, type VariantRange } from './variants';
import type {
  EvaluateFlagsResult,
  EvaluationContext,
  FlagConditionGroup,
  FlagDefinition,
  FlagReason,
  FlagReasonCode,
  FlagResult,
  PropertyFilter,
} from './types';

type ConditionOutcome = 'condition_match' | 'out_of_rollout_bound' | 'no_condition_match';

interface Subject {
  /** What the hash buckets: distinct_id, group key, or the experience-continuity hash key. */
  hashId: string;
  aggregation: number | null;
  state: RequestState;
  depth: number;
}

/** The key of the person property that early access enrollment sets. */
export function enrollmentPropertyKey(flagKey: string): string {
  return `$feature_enrollment/${flagKey}`;
}

/**
 * One request's flag results by definition, so that a flag other flags depend on is evaluated
 * once, before its dependents (memoised depth-first: dependency order), and a dependency cycle
 * is noticed (a flag met again while it is being evaluated).
 */
interface RequestState {
  done: Map<FlagDefinition, FlagResult | FlagEvaluationError>;
  inProgress: Set<FlagDefinition>;
  /** Built on the first dependency met: most requests evaluate no flag that depends on another. */
  byId?: Map<string, FlagDefinition>;
  byKey?: Map<string, FlagDefinition>;
  definitions: readonly FlagDefinition[];
}

/** Dependency chains longer than this cannot be computed (bounds the evaluation's depth). */
const MAX_DEPENDENCY_DEPTH = 64;

function requestState(flags: readonly FlagDefinition[], ctx: EvaluationContext): RequestState {
  return { done: new Map(), inProgress: new Set(), definitions: ctx.dependencyFlags ?? flags };
}

function dependencyIndex(state: RequestState): {
  byId: Map<string, FlagDefinition>;
  byKey: Map<string, FlagDefinition>;
} {
  if (!state.byId || !state.byKey) {
    state.byId = new Map();
    state.byKey = new Map();
    for (const flag of state.definitions) {
      if (!flag || flag.deleted) continue;
      state.byId.set(String(flag.id), flag);
      state.byKey.set(flag.key, flag);
    }
  }
  return { byId: state.byId, byKey: state.byKey };
}

/**
 * The flag a `type: "flag"` filter names: PostHog stores the dependency's id as the key; a key
 * is accepted too. Undefined when it does not exist (or was deleted).
 */
export function resolveDependency(
  key: unknown,
  byId: ReadonlyMap<string, FlagDefinition>,
  byKey: ReadonlyMap<string, FlagDefinition>,
): FlagDefinition | undefined {
  const text = typeof key === 'number' ? String(key) : key;
  if (typeof text !== 'string') return undefined;
  return byId.get(text) ?? byKey.get(text);
}

/**
 * Evaluates every active, non-deleted flag. A flag that cannot be computed (invalid regex,
 * malformed filters, a missing cohort or dependency, a dependency cycle, static cohort
 * membership not looked up) is left out and errorsWhileComputingFlags is set, while the others
 * are still evaluated: PostHog's partial-result contract.
 */
export function evaluateFlags(
  flags: FlagDefinition[],
  ctx: EvaluationContext,
  onError?: (flagKey: string, error: Error) => void,
): EvaluateFlagsResult {
  // No prototype: every valid key is an own entry, `__proto__` and `constructor` included.
  const results: Record<string, FlagResult> = Object.create(null) as Record<string, FlagResult>;
  let errorsWhileComputingFlags = false;
  // One clock reading per request, so every relative date in every flag shares the same "now".
  const context = ctx.now ? ctx : { ...ctx, now: new Date() };
  const state = requestState(flags, context);
  for (const flag of flags) {
    if (!flag || flag.deleted || !flag.active) continue;
    try {
      // A flag that reads no other flag is computed straight away: no other flag can be met
      // while computing it, and a dependent flag met later computes it again (pure: the same
      // result) rather than every request paying for the bookkeeping.
      results[flag.key] = compiledFlag(flag).readsFlags
        ? evaluateInRequest(flag, context, state, 0)
        : computeStandalone(flag, context, state);
    } catch (err) {
      errorsWhileComputingFlags = true;
      onError?.(String(flag.key), err instanceof Error ? err : new Error(String(err)));
    }
  }
  return { flags: results, errorsWhileComputingFlags };
}

/**
 * Evaluates one flag as defined, whatever its active/deleted state (evaluateFlags filters those).
 * Throws FlagEvaluationError when the flag cannot be computed.
 */
export function evaluateFlag(flag: FlagDefinition, ctx: EvaluationContext): FlagResult {
  return evaluateInRequest(flag, ctx, requestState([flag], ctx), 0);
}

function evaluateInRequest(
  flag: FlagDefinition,
  ctx: EvaluationContext,
  state: RequestState,
  depth: number,
): FlagResult {
  const done = state.done.get(flag);
  if (done instanceof FlagEvaluationError) throw done;
  if (done) return done;
  if (state.inProgress.has(flag) || depth > MAX_DEPENDENCY_DEPTH) {
    throw new FlagEvaluationError(`flag ${flag.key}: circular flag dependency`, flag.key);
  }
  state.inProgress.add(flag);
  try {
    const out = computeFlag(flag, ctx, state, depth);
    state.done.set(flag, out);
    return out;
  } catch (err) {
    const error = asEvaluationError(flag, err);
    state.done.set(flag, error);
    throw error;
  } finally {
    state.inProgress.delete(flag);
  }
}

/** computeFlag for a flag that reads no other flag: no memo, the same errors. */
function computeStandalone(flag: FlagDefinition, ctx: EvaluationContext, state: RequestState): FlagResult {
  try {
    return computeFlag(flag, ctx, state, 0);
  } catch (err) {
    throw asEvaluationError(flag, err);
  }
}

function asEvaluationError(flag: FlagDefinition, err: unknown): FlagEvaluationError {
  return err instanceof FlagEvaluationError
    ? err
    : new FlagEvaluationError(`flag ${flag.key}: ${(err as Error).message}`, flag.key);
}

function computeFlag(
  flag: FlagDefinition,
  ctx: EvaluationContext,
  state: RequestState,
  depth: number,
): FlagResult {
  const compiled = compiledFlag(flag);
  if (compiled.error) throw compiled.error;
  const now = ctx.now ?? new Date();
  const filters = flag.filters;
  const aggregation = filters.aggregation_group_type_index ?? null;

  let hashId: string;
  if (aggregation !== null) {
    const groupType = own(ctx.groupTypeMapping, aggregation);
    const groupKey = groupType === undefined ? undefined : own(ctx.groups, groupType);
    // A group flag without its group in the request cannot be bucketed: off, not an error.
    if (groupKey === undefined || groupKey === null || groupKey === '') {
      return result(compiled, false, undefined, reason('no_group_type', null));
    }
    hashId = String(groupKey);
  } else {
    const override = flag.ensure_experience_continuity ? own(ctx.hashKeyOverrides, flag.key) : undefined;
    hashId = override ?? ctx.distinctId;
  }
  const subject: Subject = { hashId, aggregation, state, depth };

  const enrolled = enrollment(flag, subject, ctx, now);
  if (enrolled !== undefined)
    return result(compiled, enrolled, undefined, reason('super_condition_value', 0));

  let bestCode: FlagReasonCode = 'no_condition_match';
  let bestIndex: number | null = null;
  for (const { condition, index } of compiled.ordered) {
    const outcome = conditionOutcome(flag, condition, subject, ctx, now, false);
    if (outcome === 'condition_match') {
      return result(
        compiled,
        true,
        pickVariant(compiled, condition, subject),
        reason('condition_match', index),
      );
    }
    if (outranks(outcome, bestCode)) {
      bestCode = outcome;
      bestIndex = index;
    }
  }
  return result(compiled, false, undefined, reason(bestCode, bestIndex));
}

/**
 * What evaluation derives from a definition alone, computed once per definition object instead
 * of once per request: whether it can be evaluated at all (a malformed flag fails for everyone,
 * so the check's outcome is the same every time), its conditions in evaluation order, its
 * variant table and its result metadata. Definitions are treated as immutable once evaluated
 * (decide builds new objects whenever a list is loaded); replacing `filters`, `key`, `name`,
 * `id` or `version` on the same object is noticed and recompiles.
 */
interface CompiledFlag {
  flag: FlagDefinition;
  filters: unknown;
  key: unknown;
  name: unknown;
  id: unknown;
  version: unknown;
  error?: FlagEvaluationError;
  /** Whether a condition reads another flag (`type: "flag"`): only then is the request's memo used. */
  readsFlags: boolean;
  /** Variant-override conditions first (stable), each with its original index. */
  ordered: Array<{ condition: FlagConditionGroup; index: number }>;
  variants: VariantRange[];
  /** Result metadata, shared by every result with the same outcome (frozen). */
  metadataOff: FlagResult['metadata'];
  metadataOn: Map<string, FlagResult['metadata']>;
}

const compiledFlags = new WeakMap<FlagDefinition, CompiledFlag>();

function compiledFlag(flag: FlagDefinition): CompiledFlag {
  const hit = flag && typeof flag === 'object' ? compiledFlags.get(flag) : undefined;
  if (
    hit &&
    hit.filters === flag.filters &&
    hit.key === flag.key &&
    hit.name === flag.name &&
    hit.id === flag.id &&
    hit.version === flag.version
  ) {
    return hit;
  }
  const compiled = compileFlag(flag);
  if (flag && typeof flag === 'object') compiledFlags.set(flag, compiled);
  return compiled;
}

function compileFlag(flag: FlagDefinition): CompiledFlag {
  const base = {
    flag,
    filters: flag?.filters,
    key: flag?.key,
    name: flag?.name,
    id: flag?.id,
    version: flag?.version,
  };
  const empty = {
    readsFlags: false,
    ordered: [],
    variants: [],
    metadataOff: { id: 0, version: 0 },
    metadataOn: new Map(),
  };
  try {
    assertEvaluable(flag);
  } catch (err) {
    return { ...base, ...empty, error: err as FlagEvaluationError };
  }
  const filters = flag.filters;
  // Conditions with a variant override go first (stable, so each side keeps its order), but keep
  // their original index for the reason; PostHog sorts the same way so that an override applies
  // to the first matching condition.
  const indexed = (filters.groups ?? []).map((condition, index) => ({ condition, index }));
  const ordered = [
    ...indexed.filter((c) => c.condition.variant),
    ...indexed.filter((c) => !c.condition.variant),
  ];
  const variants = variantLookupTable(filters.multivariate?.variants ?? []);
  const readsFlags = [...(filters.groups ?? []), ...(filters.super_groups ?? [])].some((condition) =>
    (condition.properties ?? []).some((filter) => filter.type === 'flag'),
  );
  const compiled: CompiledFlag = {
    ...base,
    readsFlags,
    ordered,
    variants,
    metadataOff: buildMetadata(flag, false, undefined),
    metadataOn: new Map(),
  };
  compiled.metadataOn.set('true', buildMetadata(flag, true, undefined));
  for (const v of variants) compiled.metadataOn.set(v.key, buildMetadata(flag, true, v.key));
  return compiled;
}

// Early access enrollment decides the flag only when the person carries the enrollment
// property; otherwise (undefined) evaluation falls through to the normal conditions.
function enrollment(
  flag: FlagDefinition,
  subject: Subject,
  ctx: EvaluationContext,
  now: Date,
): boolean | undefined {
  const person = ctx.personProperties;
  if (flag.filters.feature_enrollment === true) {
    const key = enrollmentPropertyKey(flag.key);
    if (!Object.prototype.hasOwnProperty.call(person, key)) return undefined;
    return person[key] === true || person[key] === 'true';
  }
  const superCondition = flag.filters.super_groups?.[0];
  const properties = superCondition?.properties ?? [];
  if (!superCondition || properties.length === 0) return undefined;
  const isSet = properties.some((p) => Object.prototype.hasOwnProperty.call(person, p.key));
  if (!isSet) return undefined;
  return conditionOutcome(flag, superCondition, subject, ctx, now, true) === 'condition_match';
}

function conditionOutcome(
  flag: FlagDefinition,
  condition: FlagConditionGroup,
  subject: Subject,
  ctx: EvaluationContext,
  now: Date,
  personOnly: boolean,
): ConditionOutcome {
  for (const filter of condition.properties ?? []) {
    let matches: boolean;
    if (filter.type === 'cohort') matches = matchCohortFilter(filter, ctx, now);
    else if (filter.type === 'flag') matches = matchDependency(flag, filter, ctx, subject);
    else {
      const properties = personOnly ? ctx.personProperties : propertiesFor(filter, subject.aggregation, ctx);
      matches = matchCheckedProperty(filter, properties, now);
    }
    if (!matches) return 'no_condition_match';
  }
  const rollout = condition.rollout_percentage;
  // PostHog's bound is inclusive: in rollout when hash <= percentage / 100. The hash is at most
  // 1 (flagHash), so from 100% on everyone is in and it is not computed.
  if (
    rollout !== null &&
    rollout !== undefined &&
    rollout < 100 &&
    flagHash(flag.key, subject.hashId) > rollout / 100
  ) {
    return 'out_of_rollout_bound';
  }
  return 'condition_match';
}

// A flag dependency (`flag_evaluates_to`): true matches any enabled value (a variant too), false
// matches disabled, a string matches that variant. An inactive dependency is disabled; a missing
// or deleted one, or one that cannot be computed, makes this flag "could not be computed".
function matchDependency(
  flag: FlagDefinition,
  filter: PropertyFilter,
  ctx: EvaluationContext,
  subject: Subject,
): boolean {
  const { byId, byKey } = dependencyIndex(subject.state);
  const dependency = resolveDependency(filter.key, byId, byKey);
  if (!dependency)
    throw new FlagEvaluationError(`flag ${flag.key}: dependency ${filter.key} not found`, flag.key);
  let value: boolean | string = false;
  if (dependency.active) {
    const out = evaluateInRequest(dependency, ctx, subject.state, subject.depth + 1);
    value = out.enabled ? (out.variant ?? true) : false;
  }
  const expected = filter.value;
  if (typeof expected === 'boolean') return expected ? value !== false : value === false;
  if (typeof expected === 'string') return value === expected;
  return false;
}

// Person filters read person properties; group filters read their group's properties; untyped
// filters (older flags) read whatever the flag aggregates by.
function propertiesFor(
  filter: PropertyFilter,
  aggregation: number | null,
  ctx: EvaluationContext,
): Record<string, unknown> {
  if (filter.type === 'person') return ctx.personProperties;
  const groupTypeIndex = filter.type === 'group' ? (filter.group_type_index ?? aggregation) : aggregation;
  if (groupTypeIndex === null || groupTypeIndex === undefined) return ctx.personProperties;
  const groupType = own(ctx.groupTypeMapping, groupTypeIndex);
  return (groupType !== undefined && own(ctx.groupProperties, groupType)) || {};
}

function pickVariant(
  compiled: CompiledFlag,
  condition: FlagConditionGroup,
  subject: Subject,
): string | undefined {
  const variants = compiled.variants;
  if (variants.length === 0) return undefined;
  // An override naming a variant that no longer exists falls back to the hashed variant.
  if (condition.variant && variants.some((v) => v.key === condition.variant)) return condition.variant;
  // The variant owning the "variant"-salted hash: lower bound inclusive, upper exclusive.
  const value = flagHash(compiled.flag.key, subject.hashId, 'variant');
  return variants.find((range) => value >= range.lower && value < range.upper)?.key;
}

function result(
  compiled: CompiledFlag,
  enabled: boolean,
  variant: string | undefined,
  why: FlagReason,
): FlagResult {
  const flag = compiled.flag;
  const metadata = enabled
    ? (compiled.metadataOn.get(variant ?? 'true') ?? buildMetadata(flag, true, variant))
    : compiled.metadataOff;
  const out: FlagResult = { key: flag.key, enabled, reason: why, metadata };
  if (enabled && variant !== undefined) out.variant = variant;
  return out;
}

function buildMetadata(
  flag: FlagDefinition,
  enabled: boolean,
  variant: string | undefined,
): FlagResult['metadata'] {
  const out: FlagResult['metadata'] = { id: flag.id, version: flag.version };
  if (enabled) {
    const payload = payloadText(own(flag.filters.payloads, variant ?? 'true'));
    if (payload !== undefined) out.payload = payload;
  }
  // PostHog reports the flag's name as metadata.description.
  if (typeof flag.name === 'string' && flag.name !== '') out.description = flag.name;
  return Object.freeze(out);
}

// Lookups in request-supplied maps must not reach Object.prototype (a flag keyed "constructor").
function own<T>(map: Record<string | number, T> | undefined, key: string | number): T | undefined {
  return map && Object.prototype.hasOwnProperty.call(map, key) ? map[key] : undefined;
}

// PostHog stores payloads as JSON text and returns that text; a payload stored as a JSON value
// is serialised so the response always carries a string holding JSON.
function payloadText(payload: unknown): string | undefined {
  if (payload === undefined || payload === null) return undefined;
  return typeof payload === 'string' ? payload : JSON.stringify(payload);
}

// Rejects definitions that cannot be evaluated before any hashing, so the outcome (error or
// not) is the same for everyone: malformed shapes, unsupported filters, invalid regexes.
function assertEvaluable(flag: FlagDefinition): void {
  const fail = (message: string): never => {
    throw new FlagEvaluationError(`flag ${String(flag?.key)}: ${message}`, flag?.key);
  };
  if (!flag || typeof flag.key !== 'string') fail('missing key');
  const filters = flag.filters as unknown;
  if (!filters || typeof filters !== 'object' || Array.isArray(filters)) fail('filters must be an object');
  const aggregation = flag.filters.aggregation_group_type_index;
  if (aggregation !== undefined && aggregation !== null && !Number.isInteger(aggregation)) {
    fail('aggregation_group_type_index must be an integer');
  }
  const variants = flag.filters.multivariate?.variants;
  if (flag.filters.multivariate && !Array.isArray(variants)) fail('multivariate.variants must be an array');
  for (const variant of variants ?? []) {
    if (!variant || typeof variant.key !== 'string' || !Number.isFinite(variant.rollout_percentage)) {
      fail('each variant needs a key and a numeric rollout_percentage');
    }
  }
  for (const list of [flag.filters.groups, flag.filters.super_groups]) {
    if (list === undefined || list === null) continue;
    if (!Array.isArray(list)) fail('condition groups must be an array');
    for (const condition of list) {
      if (!condition || typeof condition !== 'object') fail('condition group must be an object');
      const rollout = condition.rollout_percentage;
      if (rollout !== undefined && rollout !== null && !Number.isFinite(rollout)) {
        fail('rollout_percentage must be a number');
      }
      const properties = condition.properties ?? [];
      if (!Array.isArray(properties)) fail('condition properties must be an array');
      for (const filter of properties) {
        if (!filter || typeof filter.key !== 'string') fail('property filter needs a key');
        try {
          if (filter.type === 'cohort') assertSupportedCohortFilter(filter);
          else if (filter.type === 'flag') assertSupportedFlagFilter(filter);
          else assertSupportedFilter(filter);
        } catch (err) {
          fail((err as Error).message);
        }
      }
    }
  }
}

function assertSupportedFlagFilter(filter: PropertyFilter): void {
  const operator = filter.operator ?? 'flag_evaluates_to';
  if (operator !== 'flag_evaluates_to')
    throw new FlagEvaluationError(`unsupported flag dependency operator "${operator}"`);
  if (typeof filter.value !== 'boolean' && typeof filter.value !== 'string')
    throw new FlagEvaluationError(`flag dependency value must be true, false or a variant key`);
}
