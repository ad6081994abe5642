// Every counter whose label values are known before anything happens is exported at 0 from the
// start, so an alert's increase() sees the first event: a series that appears with value 1 has
// no earlier sample, and increase() over it is empty (the dead-letter alert would never fire on
// a process's first dead letter). Counters whose labels come from requests (a route and status)
// are listed as exceptions, with the reason.
import { prom } from '@sett/http';
import { createSilentLogger } from '@sett/logger';
import { TOPICS, createKafka } from '@sett/kafka';
import { createPgPool } from '@sett/db';
import { createCaptureMetrics } from '../../services/capture/src/capture/capture-metrics';
import { createDecideMetrics } from '../../services/decide/src/decide/decide-metrics';
import { createIngestionWorker } from '../../services/ingestion/src/worker';
import { GROUP_IDS } from '../../services/ingestion/src/kafka/consumers';

type Sample = { value: number; labels: Record<string, string | number> };

async function counters(registry: prom.Registry): Promise<Map<string, Sample[]>> {
  const out = new Map<string, Sample[]>();
  for (const m of registry.getMetricsAsArray()) {
    // Counters only: a gauge's collect() may reach out (ingestion's lag asks Kafka).
    if (!(m instanceof prom.Counter)) continue;
    const json = await m.get();
    out.set(json.name, json.values as Sample[]);
  }
  return out;
}

function expectZeroSeries(all: Map<string, Sample[]>, name: string, labels: Record<string, string>[]) {
  const values = all.get(name);
  expect(values).toBeDefined();
  for (const l of labels)
    expect(values).toContainEqual({
      value: 0,
      labels: expect.objectContaining(l) as Record<string, string>,
    });
}

/** Every counter is exported with at least one series, unless it is a stated exception. */
function expectEveryCounterExported(all: Map<string, Sample[]>, exceptions: Record<string, string> = {}) {
  const empty = [...all]
    .filter(([name, values]) => values.length === 0 && !(name in exceptions))
    .map(([n]) => n);
  expect(empty).toEqual([]);
}

it('ingestion: dead letters, events, drops, retries, warnings and restarts at 0 for every topic, reason, stage and group', async () => {
  const registry = new prom.Registry();
  // Nothing connects: the worker is built, not started.
  createIngestionWorker({
    kafka: createKafka({ brokers: ['127.0.0.1:1'], clientId: 'counters-test', logLevel: 'nothing' }),
    pool: createPgPool({ databaseUrl: 'postgresql://nobody@127.0.0.1:1/none', max: 1 }),
    logger: createSilentLogger(),
    registry,
    config: {
      topics: ['main', 'overflow', 'historical'],
      maxBatchBytes: 1024 * 1024,
      sessionTimeoutMs: 3000,
      heartbeatIntervalMs: 300,
      maxWaitTimeMs: 200,
      batchMaxEvents: 5_000,
      batchMaxBytes: 8 * 1024 * 1024,
      batchWaitMs: 10,
      batchConcurrency: 2,
      stallTimeoutMs: 120_000,
    },
  });
  const all = await counters(registry);
  const topics = [TOPICS.main, TOPICS.overflow, TOPICS.historical].map((topic) => ({ topic }));
  expectZeroSeries(all, 'sett_ingestion_dead_letters_total', topics);
  expectZeroSeries(all, 'sett_ingestion_events_total', topics);
  expectZeroSeries(
    all,
    'sett_ingestion_dropped_events_total',
    ['missing_event_name', 'missing_distinct_id', 'unknown_token', 'duplicate_in_batch'].map((reason) => ({
      reason,
    })),
  );
  expectZeroSeries(
    all,
    'sett_ingestion_batch_retries_total',
    ['resolve_team', 'team_settings', 'postgres', 'dead_letter'].map((stage) => ({ stage })),
  );
  expectZeroSeries(
    all,
    'sett_ingestion_consumer_restarts_total',
    [GROUP_IDS.live, GROUP_IDS.historical].map((group) => ({ group })),
  );
  expectZeroSeries(
    all,
    'sett_ingestion_warnings_total',
    ['timestamp_missing', 'timestamp_invalid', 'timestamp_in_future', 'sent_at_invalid', 'now_invalid'].map(
      (type) => ({ type }),
    ),
  );
  expectEveryCounterExported(all);
});

it('capture: accepted per topic and dropped per reason at 0', async () => {
  const registry = new prom.Registry();
  createCaptureMetrics(registry);
  const all = await counters(registry);
  expectZeroSeries(
    all,
    'capture_events_accepted_total',
    [TOPICS.main, TOPICS.overflow, TOPICS.historical].map((topic) => ({ topic })),
  );
  expectZeroSeries(
    all,
    'capture_events_dropped_total',
    ['missing_event_name', 'missing_distinct_id', 'too_large', 'too_deep'].map((reason) => ({ reason })),
  );
  expectEveryCounterExported(all);
});

it('decide: flag sources, property lookups and errors while computing at 0', async () => {
  const registry = new prom.Registry();
  createDecideMetrics(registry);
  const all = await counters(registry);
  expectZeroSeries(
    all,
    'decide_flag_definitions_total',
    ['local', 'redis', 'postgres'].map((source) => ({ source })),
  );
  expectZeroSeries(
    all,
    'decide_property_lookups_total',
    ['person', 'group', 'hash_key_override', 'static_cohort'].map((kind) => ({ kind })),
  );
  expectZeroSeries(
    all,
    'decide_errors_while_computing_flags_total',
    ['property_lookup', 'evaluation'].map((cause) => ({ cause })),
  );
  expectEveryCounterExported(all, {
    // endpoint x response shape x outcome: the shapes depend on the endpoint and its version
    // parameter; the alerts read decide's latency histogram and http_requests_total instead.
    decide_requests_total: 'labels from the request',
  });
});
