// Decide's own Prometheus metrics (the HTTP request counter and latency histogram per route
// come from @sett/http): evaluations by response shape, their latency, where flag lists and
// properties came from, errors while computing, and quota limiting.
import { prom } from '@sett/http';
import type { Registry } from 'prom-client';
import type { FlagSource } from '../flags/flag-store';
import type { Lookup } from './gather-inputs';

export interface DecideMetrics {
  requests: prom.Counter<'endpoint' | 'shape' | 'outcome'>;
  latency: prom.Histogram<'endpoint'>;
  flagSource: prom.Counter<'source'>;
  propertyLookups: prom.Counter<'kind'>;
  errorsWhileComputing: prom.Counter<'cause'>;
  quotaLimited: prom.Counter;
  redisFailures: prom.Counter;
}

export function createDecideMetrics(registry: Registry): DecideMetrics {
  const registers = [registry];
  const metrics: DecideMetrics = {
    requests: new prom.Counter({
      name: 'decide_requests_total',
      help: 'Flag evaluation requests by endpoint, response shape and outcome',
      labelNames: ['endpoint', 'shape', 'outcome'],
      registers,
    }),
    latency: new prom.Histogram({
      name: 'decide_request_duration_seconds',
      help: 'Time to answer a flag evaluation request',
      labelNames: ['endpoint'],
      buckets: [0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1],
      registers,
    }),
    flagSource: new prom.Counter({
      name: 'decide_flag_definitions_total',
      help: 'Where flag definitions came from: local (in-process cache hit), redis, postgres',
      labelNames: ['source'],
      registers,
    }),
    propertyLookups: new prom.Counter({
      name: 'decide_property_lookups_total',
      help: 'Stored property reads needed by a request (person, group, hash_key_override)',
      labelNames: ['kind'],
      registers,
    }),
    errorsWhileComputing: new prom.Counter({
      name: 'decide_errors_while_computing_flags_total',
      help: 'Flags left out of a response because they could not be computed, by cause',
      labelNames: ['cause'],
      registers,
    }),
    quotaLimited: new prom.Counter({
      name: 'decide_quota_limited_total',
      help: 'Requests answered with quotaLimited',
      registers,
    }),
    redisFailures: new prom.Counter({
      name: 'decide_redis_failures_total',
      help: 'Redis round trips that failed (decide then falls back to Postgres)',
      registers,
    }),
  };
  // Known label values are exported at 0 from the start, so increase() sees the first event.
  for (const source of ['local', 'redis', 'postgres'] as const satisfies readonly FlagSource[])
    metrics.flagSource.inc({ source }, 0);
  for (const kind of [
    'person',
    'group',
    'hash_key_override',
    'static_cohort',
  ] as const satisfies readonly Lookup[])
    metrics.propertyLookups.inc({ kind }, 0);
  for (const cause of ['property_lookup', 'evaluation']) metrics.errorsWhileComputing.inc({ cause }, 0);
  return metrics;
}
