// Step 1 of a flag evaluation request: every round trip it makes, in one function. After this,
// evaluation (evaluate-request.ts) is pure and the answer (response-format.ts) is formatting.
//
// Round trips, for a project whose token was already resolved (decide-answer.ts: warm, none;
// cold, one Redis GET, else one Postgres query and one Redis SET):
// - Warm (the steady state): none. The flag list is the flag store's in-process copy, the quota
//   is cached in process, usage is counted in process (sent to Redis about once a second, off
//   the request), and stored person, group, override and cohort answers are cached for
//   DECIDE_PERSON_CACHE_TTL_MS. A request that gives every property its flags read needs none.
// - Cold, at most, in two waves:
//   1. in parallel: the flag list (one Redis MGET; on a miss three Postgres queries and one
//      Redis MULTI writing them back), the quota (one Postgres query), the organization's first
//      usage count in this process (one Redis pipeline), the remote config for `config=true`
//      (one Redis GET, else Postgres);
//   2. in parallel, only what the flags need and the request did not give: the person (one
//      Postgres query shared by every request of the same event-loop turn), its groups (one),
//      static cohort membership (one, batched like persons), and experience-continuity hash
//      keys (one SELECT; with `$anon_distinct_id` an INSERT first).
// The hash-key INSERT stays on the read path on purpose: the request after an identify may land
// on another replica milliseconds later, and it must read the stored key, or the user is
// bucketed on their new id and the variant flips, which is what continuity exists to prevent.
// It only happens for continuity flags with an anonymous id in the request, so rarely.
//
// Any lookup that fails degrades to fewer flags (reported in `failed`), never to a 500; only a
// flag list that cannot be read at all is a 503. Every Postgres wait is bounded by the request's
// deadline (postgres-deadline.ts).
import type { ProjectRef } from '@sett/cache';
import { requiredGroupProperties } from '@sett/flags';
import type { FlagSource, FlagStore } from '../flags/flag-store';
import type { ProjectFlags } from '../flags/flag-definitions';
import type { GeoIp } from '@sett/geoip';
import type { GroupRef, PersonStore, StoredPerson } from '../persons/person-store';
import type { QuotaStore, UsageCounter } from '../quota/quota';
import type { PostgresDeadline } from './postgres-deadline';

export interface DecideInput {
  project: ProjectRef;
  distinctId: string;
  anonDistinctId?: string;
  personProperties: Record<string, unknown>;
  /** group type name -> group key */
  groups: Record<string, string>;
  groupProperties: Record<string, Record<string, unknown>>;
  /** Client address for GeoIP; undefined when GeoIP is disabled for the request. */
  ip?: string;
  disableFlags: boolean;
  /** `flag_keys` / `flag_keys_to_evaluate`: evaluate only these flags (and read only what they need). */
  flagKeys?: ReadonlySet<string>;
  /** Bounds every Postgres wait of the request; none in unit tests that do not need one. */
  deadline?: PostgresDeadline;
}

/** Which lookups failed; the flags that needed them are left out and reported. */
export interface FailedLookups {
  person: boolean;
  groups: Set<number>;
  continuity: boolean;
  cohorts: boolean;
}

export type Lookup = 'person' | 'group' | 'hash_key_override' | 'static_cohort';

export type GatheredInputs =
  | { kind: 'limited'; source: FlagSource }
  | {
      kind: 'ready';
      source: FlagSource;
      /** The project's flags, narrowed to the requested ones when the request names some. */
      project: ProjectFlags;
      /** GeoIP properties under the request's person_properties (PostHog's order). */
      overrides: Record<string, unknown>;
      person: StoredPerson | null;
      /** Group refs that were looked up, and what was found (`${index}:${key}` -> properties). */
      groupRefs: GroupRef[];
      storedGroups: Map<string, Record<string, unknown>>;
      hashKeyOverrides: Record<string, string>;
      staticCohorts: ReadonlySet<number> | undefined;
      failed: FailedLookups;
      /** The stored-property lookups this request needed (for metrics). */
      lookups: Lookup[];
    };

export interface GatherDeps {
  flagStore: FlagStore;
  personStore: PersonStore;
  quotaStore: QuotaStore;
  usage: UsageCounter;
  geoip: GeoIp;
  /** Warnings for lookups that failed (the request still answers). */
  warn(message: string, meta: Record<string, unknown>): void;
}

/** Thrown when the flag list cannot be read from anywhere (the caller answers 503). */
export class FlagsUnavailableError extends Error {
  override readonly name = 'FlagsUnavailableError';
}

const unbounded = <T>(work: Promise<T>): Promise<T> => work;

type Race = <T>(work: Promise<T>) => Promise<T>;

export async function gatherInputs(deps: GatherDeps, input: DecideInput, at: Date): Promise<GatheredInputs> {
  const race = input.deadline ? input.deadline.race : unbounded;
  const wave1 = await flagsAndQuota(deps, input, at, race);
  if (wave1.limited) return { kind: 'limited', source: wave1.source };
  const project = input.flagKeys ? onlyFlags(wave1.project, input.flagKeys) : wave1.project;
  return {
    kind: 'ready',
    source: wave1.source,
    project,
    ...(await storedInputs(deps, input, project, race)),
  };
}

/** Wave 1: the flag list and the quota, together. Throws FlagsUnavailableError without flags. */
async function flagsAndQuota(
  deps: GatherDeps,
  input: DecideInput,
  at: Date,
  race: Race,
): Promise<{ project: ProjectFlags; source: FlagSource; limited: boolean }> {
  const { teamId, organizationId } = input.project;
  // A cached quota (the steady state) is counted at once, without the deadline's timer.
  const known = deps.quotaStore.cached?.(organizationId);
  const counted =
    known !== undefined
      ? deps.usage.count(organizationId, known, at)
      : race(deps.quotaStore.quota(organizationId)).then((quota) =>
          deps.usage.count(organizationId, quota, at),
        );
  const limited = counted.catch((err: Error) => {
    deps.warn('could not check the flag quota; not limiting', { organizationId, err: err.message });
    return false;
  });
  try {
    const { project, source } = await deps.flagStore.load(teamId, race);
    return { project, source, limited: await limited };
  } catch (err) {
    deps.warn('could not load flag definitions', { teamId, err: (err as Error).message });
    throw new FlagsUnavailableError((err as Error).message);
  }
}

type StoredInputs = Omit<Extract<GatheredInputs, { kind: 'ready' }>, 'kind' | 'source' | 'project'>;

/** Wave 2: only what the flags read and the request did not give, in parallel. */
async function storedInputs(
  deps: GatherDeps,
  input: DecideInput,
  project: ProjectFlags,
  race: Race,
): Promise<StoredInputs> {
  const teamId = input.project.teamId;
  // GeoIP first, request person_properties over it (PostHog's order).
  const overrides: Record<string, unknown> = {
    ...(input.ip ? deps.geoip.lookup(input.ip) : {}),
    ...input.personProperties,
  };
  const failed: FailedLookups = { person: false, groups: new Set(), continuity: false, cohorts: false };
  const lookups: Lookup[] = [];
  const needs = project.flags.length > 0;
  const needPerson = needs && someMissing(project.personKeys, overrides);
  const groupRefs = needs ? missingGroupRefs(project, input) : [];
  const continuity = needs && project.continuityKeys.length > 0;
  const needCohorts = needs && project.needsStaticCohorts;
  if (needPerson) lookups.push('person');
  if (groupRefs.length > 0) lookups.push('group');
  if (continuity) lookups.push('hash_key_override');
  if (needCohorts) lookups.push('static_cohort');

  const store = deps.personStore;
  const [person, storedGroups, hashKeyOverrides, staticCohorts] = await Promise.all([
    needPerson
      ? race(store.person(teamId, input.distinctId)).catch((err: Error) => {
          failed.person = true;
          deps.warn('person lookup failed', { teamId, err: err.message });
          return null;
        })
      : null,
    groupRefs.length > 0
      ? race(store.groups(teamId, groupRefs)).catch((err: Error) => {
          for (const ref of groupRefs) failed.groups.add(ref.groupTypeIndex);
          deps.warn('group lookup failed', { teamId, err: err.message });
          return new Map<string, Record<string, unknown>>();
        })
      : new Map<string, Record<string, unknown>>(),
    continuity
      ? race(
          store.hashKeyOverrides(teamId, input.distinctId, input.anonDistinctId, project.continuityKeys),
        ).catch((err: Error): Record<string, string> => {
          failed.continuity = true;
          deps.warn('hash key override lookup failed', { teamId, err: err.message });
          return {};
        })
      : {},
    needCohorts
      ? race(store.staticCohorts(teamId, input.distinctId)).catch((err: Error) => {
          failed.cohorts = true;
          deps.warn('static cohort lookup failed', { teamId, err: err.message });
          return undefined;
        })
      : undefined,
  ]);
  return { overrides, person, groupRefs, storedGroups, hashKeyOverrides, staticCohorts, failed, lookups };
}

// The project as if it held only the requested flags, so that nothing another flag needs is
// looked up. Built per request, only for requests that name flags.
// The flags they depend on are evaluated too (not answered), so their needs are read as well.
function onlyFlags(project: ProjectFlags, keys: ReadonlySet<string>): ProjectFlags {
  const prepared = project.prepared.filter((p) => keys.has(p.flag.key));
  const flags = prepared.map((p) => p.flag);
  const evaluated = new Set(flags);
  for (const p of prepared) for (const d of p.dependencies) evaluated.add(d);
  const personKeys = new Set<string>();
  for (const p of prepared) for (const k of p.personKeys) personKeys.add(k);
  let groupKeys = new Map<number, Set<string>>();
  try {
    groupKeys = requiredGroupProperties([...evaluated]);
  } catch {
    // malformed filters: evaluation reports that flag as an error
  }
  const evaluatedKeys = new Set([...evaluated].map((f) => f.key));
  return {
    ...project,
    flags,
    prepared,
    personKeys,
    groupKeys,
    continuityKeys: project.continuityKeys.filter((k) => evaluatedKeys.has(k)),
    needsStaticCohorts: prepared.some((p) => p.staticCohorts.length > 0),
  };
}

// Groups named in the request whose stored properties some flag needs and the request's
// group_properties do not fully give.
function missingGroupRefs(project: ProjectFlags, input: DecideInput): GroupRef[] {
  const refs: GroupRef[] = [];
  for (const [index, keys] of project.groupKeys) {
    const name = project.groupTypes[index];
    if (name === undefined) continue;
    const groupKey = Object.hasOwn(input.groups, name) ? input.groups[name] : undefined;
    if (groupKey === undefined || groupKey === '') continue;
    const given = input.groupProperties[name] ?? {};
    if (someMissing(keys, given)) refs.push({ groupTypeIndex: index, groupKey });
  }
  return refs;
}

/** Whether `props` lacks one of `keys` (a loop: no array copied per request). */
function someMissing(keys: ReadonlySet<string>, props: Record<string, unknown>): boolean {
  for (const k of keys) if (!Object.hasOwn(props, k)) return true;
  return false;
}
