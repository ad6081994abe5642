// Capture's own Prometheus metrics (requests by route and status come from @sett/http).
import { prom } from '@sett/http';
import type { Registry } from 'prom-client';
import { TOPICS } from '@sett/kafka';
import type { DropReason } from '../events/to-message';

export type CaptureMetrics = ReturnType<typeof createCaptureMetrics>;

// Known label values are exported at 0 from the start, so increase() sees the first event.
const DROP_REASONS = [
  'missing_event_name',
  'missing_distinct_id',
  'too_large',
  'too_deep',
] as const satisfies readonly DropReason[];

export function createCaptureMetrics(registry: Registry) {
  const metrics = {
    accepted: new prom.Counter({
      name: 'capture_events_accepted_total',
      help: 'Events acknowledged by Kafka, by topic',
      labelNames: ['topic'],
      registers: [registry],
    }),
    dropped: new prom.Counter({
      name: 'capture_events_dropped_total',
      help: 'Events not ingested, by reason',
      labelNames: ['reason'],
      registers: [registry],
    }),
    produceSeconds: new prom.Histogram({
      name: 'capture_produce_duration_seconds',
      help: "Time from handing a request's events to the producer until Kafka acknowledged them all",
      labelNames: ['outcome'],
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers: [registry],
    }),
  };
  for (const topic of [TOPICS.main, TOPICS.overflow, TOPICS.historical]) metrics.accepted.inc({ topic }, 0);
  for (const reason of DROP_REASONS) metrics.dropped.inc({ reason }, 0);
  return metrics;
}
