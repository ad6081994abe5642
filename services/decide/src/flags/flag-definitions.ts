// A project's flag definitions as decide holds them in memory: normalised from whatever the
// writer stored (Redis JSON or Postgres rows), with what each flag needs precomputed once per
// list so that a request only checks set membership. Pure.
import {
  cohortClosure,
  cohortIdOf,
  conditionFilters,
  projectRegexPatterns,
  requiredGroupProperties,
  requiredPersonProperties,
  resolveDependency,
  type CohortDefinition,
  type FlagDefinition,
} from '@sett/flags';

export interface PreparedFlag {
  flag: FlagDefinition;
  /**
   * Person property keys this flag reads (super conditions, enrollment, its property cohorts and
   * the flags it depends on, transitively, included).
   */
  personKeys: string[];
  /** Group type indexes whose properties this flag reads (dependencies included). */
  groupIndexes: number[];
  /** Static cohorts this flag needs membership of (through cohorts and dependencies). */
  staticCohorts: number[];
  /** The active flags this flag depends on, transitively (evaluated with it). */
  dependencies: FlagDefinition[];
}

export interface ProjectFlags {
  teamId: number;
  /** Live flags (active and not deleted), in their stored order. */
  flags: FlagDefinition[];
  /**
   * Every non-deleted flag, inactive ones too, as local evaluation sends them (PostHog sends
   * inactive flags so SDKs answer false for them without a remote call).
   */
  definitions: FlagDefinition[];
  prepared: PreparedFlag[];
  /** group type index -> group type name */
  groupTypes: Record<number, string>;
  personKeys: Set<string>;
  groupKeys: Map<number, Set<string>>;
  /** Keys of live flags with ensure_experience_continuity. */
  continuityKeys: string[];
  /** The project's non-deleted cohorts by id (static ones without members). */
  cohorts: Map<number, CohortDefinition>;
  /** Whether any flag names a cohort: without one, a missing cohort list is no miss. */
  usesCohorts: boolean;
  /** Whether any live flag needs static cohort membership (a lookup per request). */
  needsStaticCohorts: boolean;
  /** The regex values of live flags and cohorts, compiled in turns when the list is loaded. */
  regexPatterns: unknown[];
}

type Raw = Record<string, unknown>;

/** What PostHog shows instead of an encrypted payload to anyone but the remote_config endpoint. */
export const REDACTED_PAYLOAD_VALUE = '"********* (encrypted)"';

/** Remote configuration flags carry only a payload: never evaluated, never sent for local evaluation. */
function isRemoteConfiguration(raw: unknown): boolean {
  if (!raw || typeof raw !== 'object') return false;
  return pick(raw as Raw, 'is_remote_configuration', 'isRemoteConfiguration') === true;
}

// Encrypted payloads are decrypted only by management's remote_config endpoint: everything decide
// serves shows the redacted value in their place.
function redactPayloads(filters: unknown): unknown {
  if (!filters || typeof filters !== 'object') return filters;
  const payloads = (filters as Raw).payloads;
  if (!payloads || typeof payloads !== 'object') return filters;
  const redacted = Object.create(null) as Record<string, string>; // variant keys may be `__proto__`
  for (const key of Object.keys(payloads)) redacted[key] = REDACTED_PAYLOAD_VALUE;
  return { ...(filters as Raw), payloads: redacted };
}

function pick(raw: Raw, snake: string, camel: string): unknown {
  return raw[snake] !== undefined ? raw[snake] : raw[camel];
}

/**
 * Accepts a stored flag in PostHog's snake_case (what management writes) or Prisma's camelCase,
 * so a writer's choice of serialisation cannot break evaluation. Malformed filters are kept:
 * evaluation reports them as errors for that flag only.
 */
export function toFlagDefinition(raw: unknown, teamId: number): FlagDefinition | undefined {
  if (!raw || typeof raw !== 'object') return undefined;
  const r = raw as Raw;
  if (typeof r.key !== 'string') return undefined;
  let filters = r.filters;
  if (typeof filters === 'string') {
    try {
      filters = JSON.parse(filters);
    } catch {
      // left as is: evaluateFlag rejects non-object filters as an error of this flag
    }
  }
  const id = Number(r.id);
  const version = Number(r.version ?? 1);
  const encrypted = pick(r, 'has_encrypted_payloads', 'hasEncryptedPayloads') === true;
  if (encrypted) filters = redactPayloads(filters);
  return {
    id: Number.isFinite(id) ? id : 0,
    team_id: Number(pick(r, 'team_id', 'teamId') ?? teamId),
    key: r.key,
    name: typeof r.name === 'string' ? r.name : '',
    filters: (filters ?? {}) as FlagDefinition['filters'],
    active: r.active !== false,
    deleted: r.deleted === true,
    ensure_experience_continuity:
      pick(r, 'ensure_experience_continuity', 'ensureExperienceContinuity') === true,
    version: Number.isFinite(version) ? version : 1,
    has_encrypted_payloads: encrypted,
  };
}

/** A cohort list entry (management's snake_case, or Prisma's camelCase); undefined if unusable. */
export function toCohortDefinition(raw: unknown): CohortDefinition | undefined {
  if (!raw || typeof raw !== 'object') return undefined;
  const r = raw as Raw;
  const id = Number(r.id);
  if (!Number.isInteger(id) || r.deleted === true) return undefined;
  let filters = r.filters;
  if (typeof filters === 'string') {
    try {
      filters = JSON.parse(filters);
    } catch {
      filters = null;
    }
  }
  return {
    id,
    name: typeof r.name === 'string' ? r.name : undefined,
    filters: filters && typeof filters === 'object' ? (filters as CohortDefinition['filters']) : null,
    is_static: pick(r, 'is_static', 'isStatic') === true,
    version: typeof r.version === 'number' ? r.version : undefined,
  };
}

export function prepareProjectFlags(
  teamId: number,
  rawFlags: unknown[],
  groupTypes: Record<number, string>,
  rawCohorts: unknown[] = [],
): ProjectFlags {
  const definitions = rawFlags
    .filter((raw) => !isRemoteConfiguration(raw))
    .map((raw) => toFlagDefinition(raw, teamId))
    .filter((f): f is FlagDefinition => f !== undefined && !f.deleted);
  const flags = definitions.filter((f) => f.active);
  const cohorts = new Map<number, CohortDefinition>();
  for (const raw of rawCohorts) {
    const cohort = toCohortDefinition(raw);
    if (cohort) cohorts.set(cohort.id, cohort);
  }
  const byId = new Map(definitions.map((f) => [String(f.id), f]));
  const byKey = new Map(definitions.map((f) => [f.key, f]));
  let usesCohorts = false;
  // What one flag needs by itself; a flag's needs are then united over its dependencies.
  const own = new Map<
    FlagDefinition,
    { personKeys: string[]; groupIndexes: number[]; staticCohorts: number[]; dependsOn: FlagDefinition[] }
  >();
  for (const flag of flags) {
    // A flag whose filters are too malformed to inspect needs nothing; evaluation errors on it.
    let personKeys: string[] = [];
    let groupIndexes: number[] = [];
    let staticCohorts: number[] = [];
    const dependsOn: FlagDefinition[] = [];
    try {
      personKeys = [...requiredPersonProperties([flag], cohorts)];
      groupIndexes = [...requiredGroupProperties([flag]).keys()];
      const aggregation = flag.filters?.aggregation_group_type_index;
      if (typeof aggregation === 'number' && !groupIndexes.includes(aggregation))
        groupIndexes.push(aggregation);
      const cohortIds: number[] = [];
      for (const filter of conditionFilters(flag)) {
        if (filter?.type === 'cohort') {
          usesCohorts = true;
          const id = cohortIdOf(filter);
          if (id !== undefined) cohortIds.push(id);
        } else if (filter?.type === 'flag') {
          const dependency = resolveDependency(filter.key, byId, byKey);
          if (dependency?.active) dependsOn.push(dependency);
        }
      }
      if (cohortIds.length > 0) staticCohorts = [...cohortClosure(cohortIds, cohorts).staticIds];
    } catch {
      // see above
    }
    own.set(flag, { personKeys, groupIndexes, staticCohorts, dependsOn });
  }
  const prepared = flags.map((flag) => {
    const personKeys = new Set<string>();
    const groupIndexes = new Set<number>();
    const staticCohorts = new Set<number>();
    const seen = new Set<FlagDefinition>();
    const pending = [flag];
    while (pending.length > 0) {
      const next = pending.pop()!;
      if (seen.has(next)) continue;
      seen.add(next);
      const needs = own.get(next);
      if (!needs) continue;
      for (const k of needs.personKeys) personKeys.add(k);
      for (const i of needs.groupIndexes) groupIndexes.add(i);
      for (const c of needs.staticCohorts) staticCohorts.add(c);
      pending.push(...needs.dependsOn);
    }
    seen.delete(flag);
    return {
      flag,
      personKeys: [...personKeys],
      groupIndexes: [...groupIndexes],
      staticCohorts: [...staticCohorts],
      dependencies: [...seen],
    };
  });
  let personKeys = new Set<string>();
  let groupKeys = new Map<number, Set<string>>();
  try {
    personKeys = requiredPersonProperties(flags, cohorts);
    groupKeys = requiredGroupProperties(flags);
  } catch {
    // malformed filters somewhere: fall back to the per-flag union
    for (const p of prepared) for (const k of p.personKeys) personKeys.add(k);
  }
  return {
    teamId,
    flags,
    definitions,
    prepared,
    groupTypes,
    personKeys,
    groupKeys,
    continuityKeys: flags.filter((f) => f.ensure_experience_continuity).map((f) => f.key),
    cohorts,
    usesCohorts,
    needsStaticCohorts: prepared.some((p) => p.staticCohorts.length > 0),
    regexPatterns: projectRegexPatterns(flags, cohorts.values()),
  };
}
