// Integration test harness: the real capture app in-process on port 0, with a private dev
// broker, a per-file Postgres database holding one team, real Redis under a unique key prefix,
// and a kafkajs consumer that records everything on the ingestion topics.
import http from 'node:http';
import type { Consumer } from 'kafkajs';
import pg from 'pg';
import { createRedis, createTokenResolver, type Redis } from '@sett/cache';
import { loadConfig } from '@sett/config';
import { createSilentLogger } from '@sett/logger';
import { createMetricsRegistry, startService } from '@sett/http';
import {
  createKafkajsProducer,
  createKafka,
  decodeCaptureMessage,
  TOPICS,
  type BatchingProducer,
  type CaptureMessage,
} from '@sett/kafka';
import { startDevBroker, type DevBroker } from '@sett/devstack';
import {
  createTestDatabase,
  endPool,
  uniqueName,
  waitFor as pollUntil,
  type TestDatabase,
} from '@sett/testing';
import { createCaptureApp } from '../src/app';
import { createProjectLoader } from '../src/capture/project-store';

export type Consumed = {
  topic: string;
  partition: number;
  offset: number;
  key: string | null;
  message: CaptureMessage;
};

export type Harness = {
  url: string;
  port: number;
  token: string;
  teamId: number;
  broker: DevBroker;
  redis: Redis;
  producer: BatchingProducer;
  /** Postgres queries made by capture's token loader. */
  dbQueries: () => number;
  consumed: Consumed[];
  /** Waits until `predicate` holds for the consumed messages (polling), or fails after timeoutMs. */
  waitFor(predicate: (all: Consumed[]) => boolean, timeoutMs?: number): Promise<void>;
  post(
    path: string,
    body: string | Buffer,
    headers?: Record<string, string>,
  ): Promise<{ status: number; headers: Headers; json: unknown }>;
  /** Leaves the consumer group (before stopping the broker on purpose). */
  stopConsumer(): Promise<void>;
  close(): Promise<void>;
};

export type HarnessOptions = {
  env?: Record<string, string>;
  consume?: boolean;
  sendTimeoutMs?: number;
};

/** An organization and one project with a fresh token, in the given database. */
export async function insertProject(pool: pg.Pool): Promise<{ token: string; teamId: number }> {
  const token = `phc_${uniqueName('t')}`;
  const { rows: orgRows } = await pool.query<{ id: string }>(
    `INSERT INTO organizations (id, name, slug) VALUES (gen_random_uuid(), 'Test org', $1) RETURNING id`,
    [uniqueName('org')],
  );
  const { rows } = await pool.query<{ id: number }>(
    `INSERT INTO teams (uuid, organization_id, api_token, name) VALUES (gen_random_uuid(), $1, $2, 'Test team') RETURNING id`,
    [orgRows[0]!.id, token],
  );
  return { token, teamId: rows[0]!.id };
}

/** What a spawned main.ts needs: a private broker and a database holding one project. */
export async function startProcessFixture(): Promise<{
  broker: DevBroker;
  db: TestDatabase;
  token: string;
  stop(): Promise<void>;
}> {
  const [broker, db] = await Promise.all([startDevBroker({ partitions: 2 }), createTestDatabase()]);
  const pool = new pg.Pool({ connectionString: db.url, max: 1 });
  const { token } = await insertProject(pool);
  await endPool(pool);
  return {
    broker,
    db,
    token,
    stop: async () => {
      await broker.stop();
      await db.drop();
    },
  };
}

export async function startHarness(opts: HarnessOptions = {}): Promise<Harness> {
  const config = loadConfig({ LOG_LEVEL: 'error', ...opts.env });
  const [broker, db] = await Promise.all([startDevBroker({ partitions: 4 }), createTestDatabase()]);
  const pool = new pg.Pool({ connectionString: db.url, max: 2 });
  const { token, teamId } = await insertProject(pool);
  let queries = 0;
  // Counts every query the token loader sends to Postgres.
  const counted = {
    query: <R extends Record<string, unknown>>(text: string, values: unknown[]) => {
      queries++;
      return pool.query<R>(text, values);
    },
  };

  const redis = createRedis({
    url: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379',
    name: 'capture-test',
    keyPrefix: `${uniqueName('capture')}:`,
  });
  const logger = createSilentLogger();
  const kafka = createKafka({ brokers: broker.brokers, clientId: 'capture-test', logLevel: 'error' });
  const producer = createKafkajsProducer({
    kafka,
    lingerMs: 5,
    sendTimeoutMs: opts.sendTimeoutMs ?? 5000,
    maxMessageBytes: config.kafka.messageMaxBytes,
    readiness: { probeTopics: [TOPICS.main] },
  });
  await producer.connect();
  const tokenResolver = createTokenResolver({ redis, loadFromDb: createProjectLoader(counted) });
  const app = createCaptureApp({
    config,
    logger,
    redis,
    tokenResolver,
    producer,
    registry: createMetricsRegistry('capture'),
  });
  const service = await startService({ name: 'capture', app, host: '127.0.0.1', port: 0, logger });
  const url = `http://127.0.0.1:${service.port}`;

  const consumed: Consumed[] = [];
  let consumer: Consumer | undefined;
  if (opts.consume !== false) {
    const reader = createKafka({
      brokers: broker.brokers,
      clientId: 'capture-test-reader',
      logLevel: 'nothing',
    });
    consumer = reader.consumer({
      groupId: uniqueName('capture-test'),
      sessionTimeout: 3000,
      heartbeatInterval: 300,
      maxWaitTimeInMs: 200,
    });
    await consumer.connect();
    await consumer.subscribe({
      topics: [TOPICS.main, TOPICS.overflow, TOPICS.historical],
      fromBeginning: true,
    });
    await consumer.run({
      eachMessage: async ({ topic, partition, message }) => {
        const decoded = decodeCaptureMessage(message.value);
        if (!decoded.ok) throw new Error(`undecodable message on ${topic}: ${decoded.reason}`);
        consumed.push({
          topic,
          partition,
          offset: Number(message.offset),
          key: message.key?.toString() ?? null,
          message: decoded.message,
        });
      },
    });
  }

  const waitFor = async (predicate: (all: Consumed[]) => boolean, timeoutMs = 20_000) => {
    await pollUntil('the consumed messages to match', () => predicate(consumed), { timeoutMs }).catch(
      (err: Error) => {
        throw new Error(`${err.message}; consumed ${consumed.length} messages`);
      },
    );
  };

  const post: Harness['post'] = async (path, body, headers = {}) => {
    const res = await fetch(`${url}${path}`, {
      method: 'POST',
      body,
      headers: { 'content-type': 'application/json', ...headers },
    });
    const text = await res.text();
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      json = text;
    }
    return { status: res.status, headers: res.headers, json };
  };

  return {
    url,
    port: service.port,
    token,
    teamId,
    broker,
    redis,
    producer,
    dbQueries: () => queries,
    consumed,
    waitFor,
    post,
    async stopConsumer() {
      await consumer?.disconnect().catch(() => undefined);
      consumer = undefined;
    },
    async close() {
      await service.stop();
      await consumer?.disconnect().catch(() => undefined);
      await producer.disconnect().catch(() => undefined);
      redis.disconnect();
      await endPool(pool);
      await broker.stop();
      await dropQuietly(db);
    },
  };
}

async function dropQuietly(db: TestDatabase) {
  await db.drop().catch(() => undefined);
}

/**
 * Posts `body` with `Expect: 100-continue` and resolves once the server has parsed the request
 * (it answered 100 Continue, so the request is in flight on the server, not an idle connection)
 * and the body is written: the signal that a SIGTERM sent now meets a request being served.
 * `response` resolves with the final status.
 */
export async function postInFlight(url: string, body: string): Promise<{ response: Promise<number> }> {
  let settle!: (status: number) => void;
  let fail!: (error: Error) => void;
  const response = new Promise<number>((resolve, reject) => {
    settle = resolve;
    fail = reject;
  });
  await new Promise<void>((resolve, reject) => {
    const req = http.request(url, {
      method: 'POST',
      agent: false,
      headers: {
        'content-type': 'application/json',
        'content-length': Buffer.byteLength(body),
        expect: '100-continue',
      },
    });
    req.on('continue', () => req.end(body, () => resolve()));
    req.on('response', (res) => {
      res.resume();
      res.on('end', () => settle(res.statusCode ?? 0));
    });
    req.on('error', (error) => {
      reject(error);
      fail(error);
    });
  });
  return { response };
}
