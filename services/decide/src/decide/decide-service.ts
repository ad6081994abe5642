// One flag evaluation request, in three visible steps:
// 1. gather inputs (gather-inputs.ts): every round trip, warm and cold, stated in its header;
// 2. evaluate (evaluate-request.ts): pure, flags whose inputs failed left out and reported;
// 3. respond: the route formats the outcome (response-format.ts).
// This function only joins them and counts what happened. A failed lookup degrades to fewer
// flags with errorsWhileComputingFlags, never to a 500; only a flag list that cannot be read at
// all (Redis without it, Postgres failing) is a 503.
import type { Redis } from '@sett/cache';
import { ServiceUnavailableError } from '@sett/http';
import type { Logger } from '@sett/logger';
import type { FlagStore } from '../flags/flag-store';
import type { GeoIp } from '@sett/geoip';
import type { PersonStore } from '../persons/person-store';
import type { QuotaStore, UsageCounter } from '../quota/quota';
import type { EvaluationOutcome } from './response-format';
import type { DecideMetrics } from './decide-metrics';
import { evaluateRequest } from './evaluate-request';
import { FlagsUnavailableError, gatherInputs, type DecideInput, type GatherDeps } from './gather-inputs';

export type { DecideInput };

export const FLAGS_UNAVAILABLE_DETAIL =
  'Our database service is currently unavailable. This is likely a temporary issue. Please try again later.';

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
const LIMITED: EvaluationOutcome = { flags: {}, errorsWhileComputingFlags: false, quotaLimited: true };

export function createDecideService(deps: DecideServiceDeps): DecideService {
  const now = deps.now ?? (() => new Date());
  const { metrics, logger } = deps;
  const gatherDeps: GatherDeps = { ...deps, warn: (message, meta) => logger.warn(message, meta) };

  return {
    async evaluate(input) {
      if (input.disableFlags) return NO_FLAGS;
      const at = now();

      // 1. Every round trip (gather-inputs.ts states them).
      let gathered;
      try {
        gathered = await gatherInputs(gatherDeps, input, at);
      } catch (err) {
        if (err instanceof FlagsUnavailableError) throw new ServiceUnavailableError(FLAGS_UNAVAILABLE_DETAIL);
        throw err;
      }
      metrics.flagSource.inc({ source: gathered.source });
      if (gathered.kind === 'limited') {
        metrics.quotaLimited.inc();
        return LIMITED;
      }
      for (const kind of gathered.lookups) metrics.propertyLookups.inc({ kind });

      // 2. Pure evaluation. (3., the answer, is formatted by the route: response-format.ts.)
      const evaluated = evaluateRequest(input, gathered, at);
      if (evaluated.leftOut > 0)
        metrics.errorsWhileComputing.inc({ cause: 'property_lookup' }, evaluated.leftOut);
      for (const { flagKey, message } of evaluated.errors) {
        metrics.errorsWhileComputing.inc({ cause: 'evaluation' });
        logger.debug('flag could not be computed', { teamId: input.project.teamId, flagKey, err: message });
      }
      return evaluated.outcome;
    },
  };
}
