// The batch runner with a fake writer: one message that cannot be prepared or written fails
// alone (dead-lettered with its reason) and the rest of the batch is stored; infrastructure
// failures are retried without dead-lettering anything.
import type { Pool } from 'pg';
import { prom } from '@sett/http';
import { encodeCaptureMessage, type CaptureMessage } from '@sett/kafka';
import { createSilentLogger } from '@sett/logger';
import { createBatchRunner, type DeadLetter } from '../../src/pipeline/run-batch';
import { RetryHealth } from '../../src/pipeline/retry';
import { createIngestionMetrics } from '../../src/metrics';
import type { TeamEvent } from '../../src/pipeline/types';
import type { WriteBatchResult } from '../../src/pipeline/write-batch';

const message = (i: number, properties: Record<string, unknown> = {}): CaptureMessage => ({
  uuid: `0190a8a0-0000-7000-8000-${String(i).padStart(12, '0')}`,
  token: 'phc_x',
  distinct_id: `u${i}`,
  ip: null,
  now: '2024-05-01T12:00:00.000Z',
  sent_at: null,
  event: 'e',
  properties,
  timestamp: '2024-05-01T11:00:00.000Z',
  historical_migration: false,
});

const result = (n: number): WriteBatchResult => ({
  inserted: n,
  alreadyStored: 0,
  personsCreated: 0,
  personsUpdated: 0,
  merges: 0,
  refusedMerges: 0,
  groupTypeLimited: 0,
  groupsUpserted: 0,
  groupTypes: new Map(),
  newGroupTypeTeams: new Set(),
});

function setup(writer: (events: TeamEvent[]) => Promise<WriteBatchResult>) {
  const letters: DeadLetter[] = [];
  const infos: Array<{ message: string; meta?: Record<string, unknown> }> = [];
  const health = new RetryHealth();
  const logger = createSilentLogger();
  logger.info = (message: string, meta?: Record<string, unknown>) => void infos.push({ message, meta });
  const handle = createBatchRunner({
    pool: {} as Pool,
    teams: { resolve: async () => 1 },
    sendDeadLetters: async (l) => void letters.push(...l),
    logger,
    metrics: createIngestionMetrics(new prom.Registry()),
    health,
    retry: { initialMs: 1, maxMs: 2 },
    writeBatch: (_pool, events) => writer(events),
  });
  const ctx = { heartbeat: async () => undefined, isRunning: () => true, isStale: () => false };
  const run = (values: Array<Buffer | null>) =>
    handle(
      {
        parts: [
          {
            topic: 't',
            partition: 0,
            highWatermark: String(values.length),
            messages: values.map((value, i) => ({
              offset: String(i),
              value,
              key: null,
              timestamp: '0',
              attributes: 0,
              headers: {},
            })),
          },
        ],
      },
      ctx,
    );
  return { letters, health, infos, run };
}

const enc = (m: CaptureMessage) => Buffer.from(encodeCaptureMessage(m));

it('dead-letters the event the person rules throw on and stores the rest, by bisection', async () => {
  const stored: string[] = [];
  const writes: number[] = [];
  const { letters, run } = setup(async (events) => {
    writes.push(events.length);
    // What a person rule blowing up on one event's shape looks like to the handler.
    if (events.some((e) => e.properties.hostile === true))
      throw new TypeError("Cannot read properties of undefined (reading 'set')");
    stored.push(...events.map((e) => e.distinctId));
    return result(events.length);
  });
  const values = Array.from({ length: 64 }, (_, i) => enc(message(i, i === 41 ? { hostile: true } : {})));
  await run(values);
  expect(letters).toEqual([
    expect.objectContaining({
      offset: '41',
      reason: expect.stringMatching(/^rejected while writing: TypeError: Cannot read properties/),
      value: values[41],
    }),
  ]);
  expect(stored).toHaveLength(63);
  expect(stored).not.toContain('u41');
  expect(writes.filter((n) => n === 1).length).toBeLessThan(64);
  expect(writes.length).toBeLessThanOrEqual(1 + 2 * 6);
});

it('dead-letters a message that cannot be prepared (100k-deep nesting) and stores the next one', async () => {
  const stored: string[] = [];
  const { letters, run } = setup(async (events) => {
    stored.push(...events.map((e) => e.distinctId));
    return result(events.length);
  });
  const deep = Buffer.from(
    encodeCaptureMessage(message(0)).replace(
      '"properties":{}',
      `"properties":{"p":${'['.repeat(100_000)}"\\u0000"${']'.repeat(100_000)}}`,
    ),
  );
  await run([deep, null, enc(message(2))]);
  expect(letters.map((l) => [l.offset, l.reason])).toEqual([
    ['0', 'properties nest deeper than 64 levels'],
    ['1', 'empty message value'],
  ]);
  expect(stored).toEqual(['u2']);
});

it('retries infrastructure failures (statement timeout) without dead-lettering anything', async () => {
  let failures = 0;
  const stored: string[] = [];
  const { letters, health, run } = setup(async (events) => {
    if (failures++ < 3)
      throw Object.assign(new Error('canceling statement due to statement timeout'), {
        code: '57014',
        severity: 'ERROR',
      });
    stored.push(...events.map((e) => e.distinctId));
    return result(events.length);
  });
  await run([enc(message(1)), enc(message(2))]);
  expect(stored).toEqual(['u1', 'u2']);
  expect(letters).toEqual([]);
  expect(health.problems()).toEqual([]);
});

it('treats a lost race that keeps coming back as refused data, so it cannot hold the partition', async () => {
  const { letters, run } = setup(async (events) => {
    if (events.some((e) => e.distinctId === 'u1'))
      throw Object.assign(new Error('duplicate key value violates unique constraint'), {
        code: '23505',
        severity: 'ERROR',
      });
    return result(events.length);
  });
  await run([enc(message(1)), enc(message(2))]);
  expect(letters.map((l) => l.offset)).toEqual(['0']);
  expect(letters[0]!.reason).toMatch(/SQLSTATE 23505/);
});

it('logs one info line per batch: partition, offsets, counts, persons and duration', async () => {
  const { infos, run } = setup(async (events) => ({
    ...result(events.length),
    personsCreated: 2,
    personsUpdated: 1,
    merges: 1,
  }));
  await run([enc(message(1)), null, enc({ ...message(3), distinct_id: '' }), enc(message(4))]);
  expect(infos).toEqual([
    {
      message: 'batch ingested',
      meta: {
        topic: 't',
        partitions: 1,
        offsets: 't/0@0-3',
        messages: 4,
        stored: 2,
        alreadyStored: 0,
        dropped: 1,
        deadLettered: 1,
        personsCreated: 2,
        personsUpdated: 1,
        merges: 1,
        durationMs: expect.any(Number),
      },
    },
  ]);
});
