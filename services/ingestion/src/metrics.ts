// The ingestion worker's Prometheus metrics (served on /_metrics with the process defaults).
// Events per second is rate(sett_ingestion_events_total[1m]).
import { prom } from '@sett/http';
import type { Registry } from 'prom-client';
import type { DropReason, IngestionWarning } from './pipeline/types';

export type IngestionMetrics = ReturnType<typeof createIngestionMetrics>;

// Label values known before anything happens: their series are exported at 0 from the start, so
// an alert's increase() sees the first dead letter, drop or restart (a series born at 1 has no
// earlier sample to increase from).
const DROP_REASONS = [
  'missing_event_name',
  'missing_distinct_id',
  'unknown_token',
  'duplicate_in_batch',
] as const satisfies readonly DropReason[];
const WARNINGS = [
  'timestamp_missing',
  'timestamp_invalid',
  'timestamp_in_future',
  'sent_at_invalid',
  'now_invalid',
] as const satisfies readonly IngestionWarning[];
/** The batch stages that are retried (pipeline/retry.ts, called from pipeline/run-batch.ts). */
export const RETRY_STAGES = ['resolve_team', 'team_settings', 'postgres', 'dead_letter'] as const;

export function createIngestionMetrics(
  registry: Registry,
  known: { topics: string[]; groups: string[] } = { topics: [], groups: [] },
) {
  const registers = [registry];
  const metrics = {
    events: new prom.Counter({
      name: 'sett_ingestion_events_total',
      help: 'Events written to Postgres',
      labelNames: ['topic'],
      registers,
    }),
    batchSize: new prom.Histogram({
      name: 'sett_ingestion_batch_size',
      help: 'Messages per batch written: what every assigned partition fetched, gathered (labelled by its first topic)',
      labelNames: ['topic'],
      buckets: [1, 10, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 25000],
      registers,
    }),
    batchWait: new prom.Histogram({
      name: 'sett_ingestion_batch_wait_seconds',
      help: "How long a batch's oldest messages waited between their fetch and the start of its write",
      labelNames: ['group'],
      buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers,
    }),
    producedToStored: new prom.Histogram({
      name: 'sett_ingestion_produced_to_stored_seconds',
      help: "Time from capture's produce of a batch's oldest message (its Kafka timestamp) to the batch's Postgres commit",
      labelNames: ['topic'],
      buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 1800],
      registers,
    }),
    batchDuration: new prom.Histogram({
      name: 'sett_ingestion_batch_duration_seconds',
      help: 'Time from receiving a batch to its Postgres commit, retries included',
      labelNames: ['topic'],
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
      registers,
    }),
    deadLetters: new prom.Counter({
      name: 'sett_ingestion_dead_letters_total',
      help: 'Messages sent to the dead letter topic',
      labelNames: ['topic'],
      registers,
    }),
    drops: new prom.Counter({
      name: 'sett_ingestion_dropped_events_total',
      help: 'Messages not ingested, by reason',
      labelNames: ['reason'],
      registers,
    }),
    retries: new prom.Counter({
      name: 'sett_ingestion_batch_retries_total',
      help: 'Batch attempts that failed and were retried (Postgres, Kafka or Redis unavailable, lost races)',
      labelNames: ['stage'],
      registers,
    }),
    isolationWrites: new prom.Counter({
      name: 'sett_ingestion_isolation_writes_total',
      help: 'Postgres writes spent bisecting batches whose data was refused, to find the refused events',
      registers,
    }),
    consumerRestarts: new prom.Counter({
      name: 'sett_ingestion_consumer_restarts_total',
      help: 'Restarts of a crashed Kafka consumer, per consumer group',
      labelNames: ['group'],
      registers,
    }),
    consumerStalls: new prom.Counter({
      name: 'sett_ingestion_consumer_stalls_total',
      help: 'Kafka consumers replaced by the watchdog: lag on their partitions and no batch progress for INGESTION_STALL_TIMEOUT_MS',
      labelNames: ['group'],
      registers,
    }),
    offsetResets: new prom.Counter({
      name: 'sett_ingestion_offset_resets_total',
      help: 'Committed offsets no longer on the broker, reset to the earliest offset: the messages in between were lost',
      labelNames: ['group', 'topic'],
      registers,
    }),
    warnings: new prom.Counter({
      name: 'sett_ingestion_warnings_total',
      help: 'Events ingested with a warning, by type',
      labelNames: ['type'],
      registers,
    }),
    alreadyStored: new prom.Counter({
      name: 'sett_ingestion_redelivered_events_total',
      help: 'Redelivered events skipped because they were stored',
      registers,
    }),
    merges: new prom.Counter({
      name: 'sett_ingestion_person_merges_total',
      help: 'Person merges ($identify, $create_alias)',
      registers,
    }),
    refusedMerges: new prom.Counter({
      name: 'sett_ingestion_person_merges_refused_total',
      help: '$identify merges refused because the anonymous person was already identified',
      registers,
    }),
    geoipLocated: new prom.Counter({
      name: 'sett_ingestion_geoip_located_events_total',
      help: 'Events given $geoip_* properties from their $ip',
      registers,
    }),
    definitionsWritten: new prom.Counter({
      name: 'sett_ingestion_definitions_written_total',
      help: 'Event names, property names and event-property pairs written to the definitions tables (new, or seen again after the refresh interval)',
      labelNames: ['table'],
      registers,
    }),
    groupTypeLimit: new prom.Counter({
      name: 'sett_ingestion_group_type_limit_total',
      help: '$groupidentify events whose group type did not fit the five types of the project (event stored, group not)',
      registers,
    }),
  };
  for (const topic of known.topics) {
    metrics.events.inc({ topic }, 0);
    metrics.deadLetters.inc({ topic }, 0);
  }
  for (const reason of DROP_REASONS) metrics.drops.inc({ reason }, 0);
  for (const table of ['event_definitions', 'property_definitions', 'event_properties'])
    metrics.definitionsWritten.inc({ table }, 0);
  for (const stage of RETRY_STAGES) metrics.retries.inc({ stage }, 0);
  for (const group of known.groups) {
    metrics.consumerRestarts.inc({ group }, 0);
    metrics.consumerStalls.inc({ group }, 0);
    // At 0 from the start, so the alert's increase() sees the first reset.
    for (const topic of known.topics) metrics.offsetResets.inc({ group, topic }, 0);
  }
  for (const type of WARNINGS) metrics.warnings.inc({ type }, 0);
  return metrics;
}
