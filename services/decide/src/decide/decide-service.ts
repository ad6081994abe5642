// One flag evaluation request, top to bottom: flag list from the in-process copy (else one
// Redis read, else Postgres), quota counted in process, stored properties only when a flag
// needs one the request did not give, pure evaluation. Failures of a dependency degrade to
// fewer flags with errorsWhileComputingFlags, never to a 500.
import type { ProjectRef, Redis } from '@sett/cache';
import { evaluateFlags, type EvaluationContext, type FlagDefinition, type FlagResult } from '@sett/flags';
import type { Logger } from '@sett/logger';
import type { ProjectFlags } from '../flags/flag-definitions';
import type { FlagStore } from '../flags/flag-store';
import type { GeoIp } from '../geoip/geoip';
import { groupCacheKey, type GroupRef, type PersonStore } from '../persons/person-store';
import type { QuotaStore, UsageCounter } from '../quota/quota';
import type { EvaluationOutcome } from './response-format';
import type { DecideMetrics } from './decide-metrics';

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
}

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
  ): Promise<{ project: ProjectFlags; limited: boolean }> {
    const limitedPromise = deps.quotaStore
      .quota(ref.organizationId)
      .then((quota) => deps.usage.count(ref.organizationId, quota, at))
      .catch((err: Error) => {
        logger.warn('could not check the flag quota; not limiting', {
          organizationId: ref.organizationId,
          err: err.message,
        });
        return false;
      });
    let project = deps.flagStore.cached(ref.teamId);
    let source: 'local' | 'redis' | 'postgres' = 'local';
    let redisOk = deps.redisHealth.usable();
    if (!project && redisOk) {
      try {
        project = deps.flagStore.fromRedis(
          ref.teamId,
          await deps.redis.mget(...deps.flagStore.redisKeys(ref.teamId)),
        );
        source = 'redis';
      } catch (err) {
        redisOk = false;
        deps.redisHealth.failed(err);
      }
    }
    if (!project) {
      project = await deps.flagStore.fromPostgres(ref.teamId, redisOk);
      source = 'postgres';
    }
    metrics.flagSource.inc({ source });
    return { project, limited: await limitedPromise };
  }

  return {
    async evaluate(input) {
      if (input.disableFlags) return NO_FLAGS;
      const at = now();
      const { project, limited } = await projectAndQuota(input.project, at);
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

      const failed = { person: false, groups: new Set<number>(), continuity: false };
      const [person, storedGroups, hashKeyOverrides] = await Promise.all([
        needPerson
          ? (metrics.propertyLookups.inc({ kind: 'person' }),
            deps.personStore.person(teamId, input.distinctId).catch((err: Error) => {
              failed.person = true;
              logger.warn('person lookup failed', { teamId, err: err.message });
              return null;
            }))
          : null,
        groupRefs.length > 0
          ? (metrics.propertyLookups.inc({ kind: 'group' }),
            deps.personStore.groups(teamId, groupRefs).catch((err: Error) => {
              for (const ref of groupRefs) failed.groups.add(ref.groupTypeIndex);
              logger.warn('group lookup failed', { teamId, err: err.message });
              return new Map<string, Record<string, unknown>>();
            }))
          : new Map<string, Record<string, unknown>>(),
        continuity
          ? (metrics.propertyLookups.inc({ kind: 'hash_key_override' }),
            deps.personStore
              .hashKeyOverrides(teamId, input.distinctId, input.anonDistinctId, project.continuityKeys)
              .catch((err: Error) => {
                failed.continuity = true;
                logger.warn('hash key override lookup failed', { teamId, err: err.message });
                return {};
              }))
          : {},
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
      };

      // Flags whose inputs could not be read are left out (and reported), the rest evaluated.
      let flags: FlagDefinition[] = project.flags;
      let dependencyErrors = false;
      if (failed.person || failed.groups.size > 0 || failed.continuity) {
        flags = project.prepared
          .filter(({ flag, personKeys, groupIndexes }) => {
            const broken =
              (failed.person &&
                personKeys.some((k) => !Object.prototype.hasOwnProperty.call(overrides, k))) ||
              groupIndexes.some((i) => failed.groups.has(i)) ||
              (failed.continuity && flag.ensure_experience_continuity);
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
