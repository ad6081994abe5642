// One flag evaluation request, top to bottom: flag list with group types and cohorts from the
// in-process copy (else one Redis MGET, else Postgres), quota counted in process, stored
// properties only when a flag needs one the request did not give, static cohort membership only
// when a flag needs a static cohort (both batched per event-loop turn), pure evaluation (flag
// dependencies in dependency order). Failures of a dependency degrade to
// fewer flags with errorsWhileComputingFlags, never to a 500; every Postgres wait is bounded by
// the request's deadline (postgres-deadline.ts). Only a flag list that cannot be read at all
// (Redis without it, Postgres failing) is a 503.
import type { ProjectRef, Redis } from '@sett/cache';
import {
  evaluateFlags,
  requiredGroupProperties,
  type EvaluationContext,
  type FlagDefinition,
  type FlagResult,
} from '@sett/flags';
import { ServiceUnavailableError } from '@sett/http';
import type { Logger } from '@sett/logger';
import type { ProjectFlags } from '../flags/flag-definitions';
import type { FlagStore } from '../flags/flag-store';
import { loadProjectFlags } from '../flags/flag-loader';
import type { GeoIp } from '../geoip/geoip';
import { groupCacheKey, type GroupRef, type PersonStore } from '../persons/person-store';
import type { QuotaStore, UsageCounter } from '../quota/quota';
import type { EvaluationOutcome } from './response-format';
import type { DecideMetrics } from './decide-metrics';
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

export const FLAGS_UNAVAILABLE_DETAIL =
  'Our database service is currently unavailable. This is likely a temporary issue. Please try again later.';

const unbounded = <T>(work: Promise<T>): Promise<T> => work;

export interface DecideService {
  evaluate(input: DecideInput): Promise<EvaluationOutcome>;
}

export interface RedisHealth {
  usable(): boolean;
  failed(err: unknown): void;
}

/** After a failed round trip, requests skip Redis for a moment instead of each waiting out a timeout. */
export function createRedisHealth(opts: {
  backoffMs: number;
  onFailure?: (err: unknown) => void;
  now?: () => number;
}): RedisHealth {
  const now = opts.now ?? Date.now;
  let downUntil = 0;
  return {
    usable: () => now() >= downUntil,
    failed(err) {
      downUntil = now() + opts.backoffMs;
      opts.onFailure?.(err);
    },
  };
}

export interface DecideServiceDeps {
  redis: Redis;
  redisHealth: RedisHealth;
  flagStore: FlagStore;
  personStore: PersonStore;
  quotaStore: QuotaStore;
  usage: UsageCounter;
  geoip: GeoIp;
  logger: Logger;
  metrics: DecideMetrics;
  now?: () => Date;
}

const NO_FLAGS: EvaluationOutcome = { flags: {}, errorsWhileComputingFlags: false, quotaLimited: false };

export function createDecideService(deps: DecideServiceDeps): DecideService {
  const now = deps.now ?? (() => new Date());
  const { metrics, logger } = deps;

  // Flag list: the in-process copy, else one Redis MGET, else Postgres. Quota usage is counted
  // in process and sent to Redis in batches (see quota.ts), so a cache hit costs no round trip.
  async function projectAndQuota(
    ref: ProjectRef,
    at: Date,
    race: PostgresDeadline['race'],
  ): Promise<{ project: ProjectFlags; limited: boolean }> {
    const limitedPromise = race(deps.quotaStore.quota(ref.organizationId))
      .then((quota) => deps.usage.count(ref.organizationId, quota, at))
      .catch((err: Error) => {
        logger.warn('could not check the flag quota; not limiting', {
          organizationId: ref.organizationId,
          err: err.message,
        });
        return false;
      });
    let loaded;
    try {
      loaded = await loadProjectFlags(deps, ref.teamId, race);
    } catch (err) {
      logger.warn('could not load flag definitions', { teamId: ref.teamId, err: (err as Error).message });
      throw new ServiceUnavailableError(FLAGS_UNAVAILABLE_DETAIL);
    }
    const { project, source } = loaded;
    metrics.flagSource.inc({ source });
    return { project, limited: await limitedPromise };
  }

  return {
    async evaluate(input) {
      if (input.disableFlags) return NO_FLAGS;
      const at = now();
      const race = input.deadline ? input.deadline.race : unbounded;
      const loaded = await projectAndQuota(input.project, at, race);
      const { limited } = loaded;
      const project = input.flagKeys ? onlyFlags(loaded.project, input.flagKeys) : loaded.project;
      if (limited) {
        metrics.quotaLimited.inc();
        return { flags: {}, errorsWhileComputingFlags: false, quotaLimited: true };
      }
      if (project.flags.length === 0) return NO_FLAGS;

      const teamId = input.project.teamId;
      // GeoIP first, request person_properties over it (PostHog's order).
      const overrides: Record<string, unknown> = {
        ...(input.ip ? deps.geoip.lookup(input.ip) : {}),
        ...input.personProperties,
      };

      const needPerson = [...project.personKeys].some(
        (k) => !Object.prototype.hasOwnProperty.call(overrides, k),
      );
      const groupRefs = missingGroupRefs(project, input);
      const continuity = project.continuityKeys.length > 0;

      const failed = { person: false, groups: new Set<number>(), continuity: false, cohorts: false };
      const [person, storedGroups, hashKeyOverrides, staticCohorts] = await Promise.all([
        needPerson
          ? (metrics.propertyLookups.inc({ kind: 'person' }),
            race(deps.personStore.person(teamId, input.distinctId)).catch((err: Error) => {
              failed.person = true;
              logger.warn('person lookup failed', { teamId, err: err.message });
              return null;
            }))
          : null,
        groupRefs.length > 0
          ? (metrics.propertyLookups.inc({ kind: 'group' }),
            race(deps.personStore.groups(teamId, groupRefs)).catch((err: Error) => {
              for (const ref of groupRefs) failed.groups.add(ref.groupTypeIndex);
              logger.warn('group lookup failed', { teamId, err: err.message });
              return new Map<string, Record<string, unknown>>();
            }))
          : new Map<string, Record<string, unknown>>(),
        continuity
          ? (metrics.propertyLookups.inc({ kind: 'hash_key_override' }),
            race(
              deps.personStore.hashKeyOverrides(
                teamId,
                input.distinctId,
                input.anonDistinctId,
                project.continuityKeys,
              ),
            ).catch((err: Error) => {
              failed.continuity = true;
              logger.warn('hash key override lookup failed', { teamId, err: err.message });
              return {};
            }))
          : {},
        project.needsStaticCohorts
          ? (metrics.propertyLookups.inc({ kind: 'static_cohort' }),
            race(deps.personStore.staticCohorts(teamId, input.distinctId)).catch(
              (err: Error): ReadonlySet<number> | undefined => {
                failed.cohorts = true;
                logger.warn('static cohort lookup failed', { teamId, err: err.message });
                return undefined;
              },
            ))
          : undefined,
      ]);

      const groupProperties: Record<string, Record<string, unknown>> = {};
      for (const [name, props] of Object.entries(input.groupProperties)) groupProperties[name] = props;
      for (const ref of groupRefs) {
        const name = project.groupTypes[ref.groupTypeIndex]!;
        const stored = storedGroups.get(groupCacheKey(ref));
        // Request-given group properties win over stored ones, key by key.
        if (stored) groupProperties[name] = { ...stored, ...(input.groupProperties[name] ?? {}) };
      }

      const ctx: EvaluationContext = {
        distinctId: input.distinctId,
        personProperties: person ? { ...person.properties, ...overrides } : overrides,
        groups: input.groups,
        groupProperties,
        groupTypeMapping: project.groupTypes,
        hashKeyOverrides,
        now: at,
        cohorts: project.cohorts,
        staticCohorts,
        dependencyFlags: project.definitions,
      };

      // Flags whose inputs could not be read are left out (and reported), the rest evaluated.
      let flags: FlagDefinition[] = project.flags;
      let dependencyErrors = false;
      if (failed.person || failed.groups.size > 0 || failed.continuity || failed.cohorts) {
        flags = project.prepared
          .filter(({ flag, personKeys, groupIndexes, staticCohorts: needed }) => {
            const broken =
              (failed.person &&
                personKeys.some((k) => !Object.prototype.hasOwnProperty.call(overrides, k))) ||
              groupIndexes.some((i) => failed.groups.has(i)) ||
              (failed.continuity && flag.ensure_experience_continuity) ||
              (failed.cohorts && needed.length > 0);
            if (broken) {
              dependencyErrors = true;
              metrics.errorsWhileComputing.inc({ cause: 'property_lookup' });
            }
            return !broken;
          })
          .map((p) => p.flag);
      }
      const result = evaluateFlags(flags, ctx, (flagKey, error) => {
        metrics.errorsWhileComputing.inc({ cause: 'evaluation' });
        logger.debug('flag could not be computed', { teamId, flagKey, err: error.message });
      });
      return {
        flags: result.flags as Record<string, FlagResult>,
        errorsWhileComputingFlags: result.errorsWhileComputingFlags || dependencyErrors,
        quotaLimited: false,
      };
    },
  };
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
    const groupKey = Object.prototype.hasOwnProperty.call(input.groups, name)
      ? input.groups[name]
      : undefined;
    if (groupKey === undefined || groupKey === '') continue;
    const given = input.groupProperties[name] ?? {};
    if ([...keys].some((k) => !Object.prototype.hasOwnProperty.call(given, k))) {
      refs.push({ groupTypeIndex: index, groupKey });
    }
  }
  return refs;
}
