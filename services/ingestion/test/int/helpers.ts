// Shared set-up of the ingestion integration tests: a private dev broker per test file, a
// fresh database, a Redis key prefix, a project to send to, message builders, and an
// in-process worker with fast consumer settings.
import { randomUUID } from 'node:crypto';
import type { Kafka } from 'kafkajs';
import type { Pool } from 'pg';
import { createRedis, type Redis } from '@sett/cache';
import { createPgPool } from '@sett/db';
import { startDevBroker, type DevBroker } from '@sett/devstack';
import { createRouteApp, prom, startService } from '@sett/http';
import {
  TOPICS,
  createProducer,
  createKafka,
  encodeCaptureMessage,
  type BatchingProducer,
  type CaptureMessage,
  type DeadLetterMessage,
} from '@sett/kafka';
import { createSilentLogger } from '@sett/logger';
import { createTestDatabase, uniqueName, waitFor as pollUntil, type TestDatabase } from '@sett/testing';
import {
  createIngestionWorker,
  type IngestionWorker,
  type IngestionWorkerConfig,
  type IngestionWorkerDeps,
} from '../../src/worker';
import { ingestionReadiness } from '../../src/readiness';
import { ingestionRoutes } from '../../src/routes';

export const FAST = { sessionTimeoutMs: 3000, heartbeatIntervalMs: 300, maxWaitTimeMs: 200 } as const;

export type Env = {
  broker: DevBroker;
  db: TestDatabase;
  pool: Pool;
  redis: Redis;
  keyPrefix: string;
  kafka: Kafka;
  producer: BatchingProducer;
  close(): Promise<void>;
};

export async function setupEnv(partitions = 4): Promise<Env> {
  const [broker, db] = await Promise.all([startDevBroker({ partitions }), createTestDatabase()]);
  const pool = createPgPool({ databaseUrl: db.url, max: 6 });
  const keyPrefix = `${uniqueName('ing')}:`;
  const redis = createRedis({ url: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', keyPrefix });
  const kafka = createKafka({ brokers: broker.brokers, clientId: 'ingestion-test', logLevel: 'error' });
  // Input is produced as capture produces it: the shipped client (node-rdkafka when built) with
  // the default compression, so the kafkajs consumer reads lz4 batches.
  const producer = createProducer({
    brokers: broker.brokers,
    clientId: 'ingestion-test',
    lingerMs: 5,
    maxBatchMessages: 2000,
    compression: 'lz4',
  });
  await producer.connect();
  return {
    broker,
    db,
    pool,
    redis,
    keyPrefix,
    kafka,
    producer,
    async close() {
      await producer.disconnect().catch(() => undefined);
      // Our keys only: a client without the prefix scans for it.
      const raw = createRedis({ url: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379' });
      const keys = await raw.keys(`${keyPrefix}*`);
      if (keys.length > 0) await raw.del(...keys);
      await raw.quit();
      await redis.quit();
      await pool.end();
      await db.drop();
      await broker.stop();
    },
  };
}

export async function createTeam(pool: Pool, name = 'test'): Promise<{ teamId: number; token: string }> {
  const orgId = randomUUID();
  const token = `phc_${randomUUID().replace(/-/g, '')}`;
  await pool.query(`INSERT INTO organizations (id, name, slug) VALUES ($1, $2, $3)`, [
    orgId,
    name,
    `${name}-${orgId}`,
  ]);
  const { rows } = await pool.query<{ id: number }>(
    `INSERT INTO teams (uuid, organization_id, api_token, name) VALUES ($1, $2, $3, $4) RETURNING id`,
    [randomUUID(), orgId, token, name],
  );
  return { teamId: rows[0]!.id, token };
}

let seq = 0;
/** A message as capture produces it (uuid v4 here; capture uses v7, any UUID works). */
export function captureMessage(
  token: string,
  distinctId: string,
  event: string,
  properties: Record<string, unknown> = {},
  extra: Partial<CaptureMessage> = {},
): CaptureMessage {
  const ts = new Date(Date.UTC(2024, 0, 1) + ++seq * 1000).toISOString();
  return {
    uuid: randomUUID(),
    token,
    distinct_id: distinctId,
    ip: null,
    now: ts,
    sent_at: null,
    event,
    properties,
    timestamp: ts,
    historical_migration: false,
    ...extra,
  };
}

export async function produce(
  producer: BatchingProducer,
  messages: CaptureMessage[],
  topic: string = TOPICS.main,
): Promise<void> {
  await producer.send(
    topic,
    messages.map((m) => ({
      key: topic === TOPICS.overflow ? null : `${m.token}:${m.distinct_id}`,
      value: encodeCaptureMessage(m),
    })),
  );
}

export function startWorker(
  env: Env,
  opts: {
    config?: Partial<IngestionWorkerConfig>;
    groupIds?: { live: string; historical: string };
    pool?: Pool;
    beforeBatch?: IngestionWorkerDeps['beforeBatch'];
    geoip?: IngestionWorkerDeps['geoip'];
    kafka?: IngestionWorkerDeps['kafka'];
    logger?: IngestionWorkerDeps['logger'];
  } = {},
) {
  const registry = new prom.Registry();
  const worker: IngestionWorker = createIngestionWorker({
    kafka: opts.kafka ?? env.kafka,
    pool: opts.pool ?? env.pool,
    redis: env.redis,
    logger: opts.logger ?? createSilentLogger(),
    registry,
    config: {
      topics: ['main', 'overflow', 'historical'],
      maxBatchBytes: 1024 * 1024,
      batchMaxEvents: 5_000,
      batchMaxBytes: 8 * 1024 * 1024,
      batchWaitMs: 10,
      batchConcurrency: 2,
      stallTimeoutMs: 120_000,
      ...FAST,
      ...opts.config,
    },
    groupIds: opts.groupIds,
    retry: { initialMs: 50, maxMs: 300 },
    restart: { initialMs: 200, maxMs: 1000 },
    beforeBatch: opts.beforeBatch,
    geoip: opts.geoip,
  });
  return { worker, registry };
}

/** @sett/testing's waitFor with ingestion's longer default (30 s). */
export function waitFor<T>(
  what: string,
  check: () => Promise<T | false | undefined | null> | T | false,
  timeoutMs = 30_000,
): Promise<T> {
  return pollUntil(what, check, { timeoutMs, intervalMs: 100 });
}

export async function countEvents(pool: Pool, teamId?: number): Promise<number> {
  const { rows } = await pool.query<{ n: string }>(
    teamId === undefined
      ? 'SELECT count(*) AS n FROM events'
      : 'SELECT count(*) AS n FROM events WHERE team_id = $1',
    teamId === undefined ? [] : [teamId],
  );
  return Number(rows[0]!.n);
}

/** distinct id -> sorted list of the distinct ids of its person, plus that person's properties. */
export async function personState(pool: Pool, teamId: number) {
  const { rows } = await pool.query<{
    person_id: string;
    ids: string[];
    properties: Record<string, unknown>;
    is_identified: boolean;
  }>(
    `SELECT p.id AS person_id, array_agg(d.distinct_id ORDER BY d.distinct_id) AS ids, p.properties, p.is_identified
       FROM persons p JOIN person_distinct_ids d ON d.person_id = p.id
      WHERE p.team_id = $1 GROUP BY p.id ORDER BY min(d.distinct_id)`,
    [teamId],
  );
  return rows.map((r) => ({ ids: r.ids, properties: r.properties, isIdentified: r.is_identified }));
}

export async function metricValue(
  registry: prom.Registry,
  name: string,
  labels: Record<string, string> = {},
): Promise<number> {
  const metric = (await registry.getMetricsAsJSON()).find((m) => m.name === name);
  if (!metric) return 0;
  return (metric.values as Array<{ value: number; labels: Record<string, string | number> }>)
    .filter((v) => Object.entries(labels).every(([k, val]) => String(v.labels[k]) === val))
    .reduce((sum, v) => sum + v.value, 0);
}

/** The real /_ready of ingestion (main.ts's checks) for an in-process worker, on 127.0.0.1. */
export async function startReadyServer(
  worker: IngestionWorker,
  pool: Pool,
): Promise<{
  ready(): Promise<{ status: number; body: { checks: Record<string, { ok: boolean; error?: string }> } }>;
  close(): Promise<void>;
}> {
  const logger = createSilentLogger();
  const app = createRouteApp({
    name: 'ingestion',
    logger,
    registry: new prom.Registry(),
    table: ingestionRoutes,
    deps: {},
    readiness: ingestionReadiness(worker, pool),
  });
  const service = await startService({ name: 'ingestion', app, host: '127.0.0.1', port: 0, logger });
  const url = `http://127.0.0.1:${service.port}/_ready`;
  return {
    async ready() {
      const res = await fetch(url);
      return { status: res.status, body: (await res.json()) as never };
    },
    close: () => service.stop(),
  };
}

/** Reads the dead letter topic from the beginning (a fresh group) until `count` letters came. */
export async function readDeadLetters(
  env: Env,
  count: number,
  timeoutMs = 30_000,
): Promise<DeadLetterMessage[]> {
  const letters: DeadLetterMessage[] = [];
  const consumer = env.kafka.consumer({
    groupId: uniqueName('dlq-reader'),
    ...{ sessionTimeout: 3000, heartbeatInterval: 300, maxWaitTimeInMs: 200 },
  });
  await consumer.connect();
  try {
    await consumer.subscribe({ topics: [TOPICS.deadLetter], fromBeginning: true });
    await consumer.run({
      eachMessage: async ({ message }) => {
        letters.push(JSON.parse(message.value!.toString()) as DeadLetterMessage);
      },
    });
    await waitFor(`${count} dead letters`, () => letters.length >= count, timeoutMs);
  } finally {
    await consumer.disconnect();
  }
  return letters;
}
