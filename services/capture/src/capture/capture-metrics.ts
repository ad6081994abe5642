// Capture's own Prometheus metrics (requests by route and status come from @sett/http).
import { prom } from '@sett/http';
import type { Registry } from 'prom-client';

export type CaptureMetrics = ReturnType<typeof createCaptureMetrics>;

export function createCaptureMetrics(registry: Registry) {
  return {
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
}
