// `pnpm bench capture`: the capture service (a child process running services/capture/src/main.ts
// against a private dev broker, Redis and a scratch database) under load on both hot paths:
// `/batch/` with 100-event batches of realistic ~400-byte events, and `/i/v0/e/` with single
// events. In the same run, two baselines, each its own child process:
// - a server that only reads the body, JSON-parses it and answers 200 (the HTTP ceiling);
// - the Kafka client alone: @sett/kafka's producer (the client capture ships, its settings)
//   producing the very messages capture would produce for the same bodies, with as many
//   concurrent callers as the load has connections (the Kafka ceiling).
// Targets: batch >= 0.35 of the parse-only server's events/s and >= 0.8 of the Kafka client's;
// single events >= 0.6 of the parse-only server's requests/s. CAPTURE_WORKERS in the
// environment (a count or "auto") runs capture as that many cluster workers; the baselines stay
// one process.
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { loadConfig } from '@sett/config';
import { createProducer, encodeCaptureMessage, TOPICS, type ProducerMessage } from '@sett/kafka';
import { createRedis, writeProjectToken } from '@sett/cache';
import {
  createPgPool,
  ensureDatabase,
  migrateDeploy,
  quoteIdent,
  withDatabase,
  withMaintenanceClient,
} from '@sett/db';
import { startDevBroker } from '@sett/devstack';
import {
  fmt,
  freePort,
  insertBenchProject,
  load,
  ratioLine,
  startCapture,
  startChild,
  type LoadResult,
} from './lib';

const BASELINE_ENV = 'SETT_CAPTURE_BENCH_BASELINE_PORT';
const KAFKA_ONLY_ENV = 'SETT_CAPTURE_BENCH_KAFKA_ONLY';
const BATCH_SIZE = 100;
const SECONDS = 10;
const BODIES = 64;
const DISTINCT_IDS = 20_000;

// Baseline role: started as a child with the env var set, it reads, parses and answers.
if (process.env[BASELINE_ENV]) {
  const port = Number(process.env[BASELINE_ENV]);
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      try {
        JSON.parse(Buffer.concat(chunks).toString('utf8'));
        res.writeHead(200, { 'content-type': 'application/json' }).end('{"status":1}');
      } catch {
        res.writeHead(400).end();
      }
    });
  });
  server.keepAliveTimeout = 65_000;
  server.listen(port, '127.0.0.1', () => process.stdout.write(`baseline ready on ${port}\n`));
}

// Kafka-only role: started as a child with the env var set, it produces the messages in the
// given file (one array of {key, value} per request body) from `connections` concurrent callers
// for `seconds`, after a warm-up, and prints the acknowledged messages per second as JSON.
type KafkaOnlyJob = { brokers: string; file: string; connections: number; seconds: number };
if (process.env[KAFKA_ONLY_ENV]) {
  void kafkaOnly(JSON.parse(process.env[KAFKA_ONLY_ENV]!) as KafkaOnlyJob).then(
    (perSecond) => {
      process.stdout.write(`${JSON.stringify({ perSecond })}\n`);
      process.exit(0);
    },
    (err: Error) => {
      process.stderr.write(`kafka-only failed: ${err.stack}\n`);
      process.exit(1);
    },
  );
}

async function kafkaOnly(job: KafkaOnlyJob): Promise<number> {
  const config = loadConfig({ ...process.env, KAFKA_BROKERS: job.brokers });
  const requests = (JSON.parse(fs.readFileSync(job.file, 'utf8')) as Array<Array<[string, string]>>).map(
    (r): ProducerMessage[] => r.map(([key, value]) => ({ key, value: Buffer.from(value) })),
  );
  // The client capture ships with (node-rdkafka when built), with capture's settings.
  const producer = createProducer({
    brokers: [job.brokers],
    clientId: 'bench-kafka-only',
    client: config.kafka.client,
    compression: config.kafka.compression,
    lingerMs: config.kafka.lingerMs,
    maxBatchMessages: config.kafka.batchMaxMessages,
    sendTimeoutMs: config.kafka.sendTimeoutMs,
    maxMessageBytes: config.kafka.messageMaxBytes,
  });
  await producer.connect();
  let next = 0;
  const run = async (seconds: number): Promise<number> => {
    const until = Date.now() + seconds * 1000;
    let acked = 0;
    await Promise.all(
      Array.from({ length: job.connections }, async () => {
        while (Date.now() < until) {
          const messages = requests[next++ % requests.length]!;
          await producer.send(TOPICS.main, messages);
          acked += messages.length;
        }
      }),
    );
    return acked / seconds;
  };
  await run(2);
  const perSecond = await run(job.seconds);
  await producer.disconnect();
  return perSecond;
}

/** Runs the Kafka-only role in its own process and returns its messages per second. */
function measureKafkaOnly(job: KafkaOnlyJob): Promise<number> {
  return new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      ['--import', 'tsx', __filename],
      { env: { ...process.env, [KAFKA_ONLY_ENV]: JSON.stringify(job) }, maxBuffer: 1 << 20 },
      (err, stdout, stderr) => {
        if (err) return reject(new Error(`kafka-only run failed: ${err.message}\n${stderr}`));
        const last = stdout.trim().split('\n').pop() ?? '';
        resolve((JSON.parse(last) as { perSecond: number }).perSecond);
      },
    );
  });
}

/** The Kafka messages (key, value) capture produces for a body: the same encoder, same key. */
function messagesOf(body: string, token: string): Array<[string, string]> {
  const parsed = JSON.parse(body) as { batch?: Array<Record<string, unknown>> } & Record<string, unknown>;
  const now = new Date().toISOString();
  return (parsed.batch ?? [parsed]).map((e) => {
    const distinctId = String(e.distinct_id);
    const value = encodeCaptureMessage({
      uuid: String(e.uuid),
      token,
      distinct_id: distinctId,
      ip: '127.0.0.1',
      now,
      sent_at: null,
      event: String(e.event),
      properties: e.properties as Record<string, unknown>,
      timestamp: typeof e.timestamp === 'string' ? e.timestamp : null,
      historical_migration: false,
    });
    return [`${token}:${distinctId}`, value];
  });
}

const PAGES = ['/', '/pricing', '/docs/getting-started', '/blog/how-we-ship', '/signup', '/settings/billing'];
const BROWSERS = ['Chrome', 'Firefox', 'Safari', 'Edge'];

/** A realistic browser-SDK event of ~400 bytes once serialized. */
function event(n: number): Record<string, unknown> {
  const page = PAGES[n % PAGES.length];
  return {
    event: n % 5 === 0 ? 'signed_up' : '$pageview',
    distinct_id: `user-${Math.floor(Math.random() * DISTINCT_IDS)}`,
    uuid: randomUUID(),
    timestamp: new Date(Date.now() - (n % 60) * 1000).toISOString(),
    properties: {
      $current_url: `https://app.example.com${page}?ref=${n % 17}`,
      $browser: BROWSERS[n % BROWSERS.length],
      $browser_version: 120 + (n % 8),
      $os: n % 2 ? 'Mac OS X' : 'Windows',
      $screen_width: 1440,
      $screen_height: 900,
      $lib: 'web',
      $lib_version: '1.200.0',
      $session_id: `01900000-0000-7000-8000-${String(n % 1000).padStart(12, '0')}`,
      plan: n % 3 ? 'free' : 'pro',
    },
  };
}

export async function run(): Promise<boolean> {
  const broker = await startDevBroker({ partitions: 16 });
  const serverUrl = process.env.DATABASE_URL || 'postgresql://root@127.0.0.1:5432/postgres';
  const dbName = `sett_bench_capture_${Date.now().toString(36)}`;
  const dbUrl = withDatabase(serverUrl, dbName);
  const redisUrl = process.env.REDIS_URL || 'redis://127.0.0.1:6379';
  const redis = createRedis({ url: redisUrl, name: 'bench-capture' });
  const children: Array<{ stop(): Promise<void> }> = [];
  try {
    await ensureDatabase(dbUrl);
    await migrateDeploy({ databaseUrl: dbUrl });
    const pool = createPgPool({ databaseUrl: dbUrl, max: 1 });
    const { token, teamId, organizationId } = await insertBenchProject(pool).finally(() => pool.end());
    await writeProjectToken(redis, token, { teamId, organizationId });

    const capture = await startCapture(dbUrl, broker.bootstrap);
    children.push(capture);
    const capturePort = capture.port;
    const baselinePort = await freePort();
    children.push(await startChild(__filename, { [BASELINE_ENV]: String(baselinePort) }, /baseline ready/));

    let n = 0;
    const batchBodies = Array.from({ length: BODIES }, () =>
      JSON.stringify({ api_key: token, batch: Array.from({ length: BATCH_SIZE }, () => event(n++)) }),
    );
    const singleBodies = Array.from({ length: BODIES * 20 }, () =>
      JSON.stringify({ api_key: token, ...event(n++) }),
    );
    const avgEventBytes = batchBodies.reduce((s, b) => s + b.length, 0) / (BODIES * BATCH_SIZE);
    process.stdout.write(
      `events ~${Math.round(avgEventBytes)} bytes, batch bodies ~${Math.round(batchBodies[0]!.length / 1024)} KB, ${SECONDS} s per run, capture workers: ${process.env.CAPTURE_WORKERS || '1'}, linger: ${process.env.KAFKA_PRODUCER_LINGER_MS || 'default'} ms\n`,
    );
    const rotate = (bodies: string[]) => {
      let i = 0;
      return () => bodies[i++ % bodies.length]!;
    };

    const measure = (port: number, p: string, bodies: string[], connections: number): Promise<LoadResult> =>
      load({
        url: `http://127.0.0.1:${port}${p}`,
        body: rotate(bodies),
        connections,
        durationSeconds: SECONDS,
      });

    // Warm-up (JIT, connections, producer metadata), not measured.
    await load({
      url: `http://127.0.0.1:${capturePort}/batch/`,
      body: rotate(batchBodies),
      connections: 4,
      durationSeconds: 2,
    });

    // The Kafka client alone gets the same messages, and as many concurrent callers as the load
    // has connections (one send per request body, as capture makes).
    const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'sett-bench-capture-'));
    const kafkaJob = (bodies: string[], name: string, connections: number): KafkaOnlyJob => {
      const file = path.join(tmp, `${name}.json`);
      fs.writeFileSync(file, JSON.stringify(bodies.map((b) => messagesOf(b, token))));
      return { brokers: broker.bootstrap, file, connections, seconds: SECONDS };
    };
    const batchJob = kafkaJob(batchBodies, 'batch', 16);
    const singleJob = kafkaJob(singleBodies, 'single', 64);

    const baseBatch = await measure(baselinePort, '/batch/', batchBodies, 16);
    const capBatch = await measure(capturePort, '/batch/', batchBodies, 16);
    const kafkaBatch = await measureKafkaOnly(batchJob);
    const baseSingle = await measure(baselinePort, '/i/v0/e/', singleBodies, 64);
    const capSingle = await measure(capturePort, '/i/v0/e/', singleBodies, 64);
    const kafkaSingle = await measureKafkaOnly(singleJob);
    fs.rmSync(tmp, { recursive: true, force: true });

    const metrics = await (await fetch(`http://127.0.0.1:${capturePort}/_metrics`)).text();
    const accepted = [...metrics.matchAll(/^capture_events_accepted_total\{[^}]*\} (\d+)/gm)].reduce(
      (s, m) => s + Number(m[1]),
      0,
    );

    const line = (label: string, r: LoadResult, perRequest: number) =>
      `${label}: ${fmt(r.rps * perRequest)} events/s (${fmt(r.rps)} req/s), p50 ${r.p50} ms, p99 ${r.p99} ms, non-2xx ${r.non2xx}, errors ${r.errors}\n`;
    process.stdout.write(line('baseline /batch/ ', baseBatch, BATCH_SIZE));
    process.stdout.write(line('capture  /batch/ ', capBatch, BATCH_SIZE));
    process.stdout.write(`kafka client alone, 100-message sends: ${fmt(kafkaBatch)} events/s\n`);
    process.stdout.write(line('baseline /i/v0/e/', baseSingle, 1));
    process.stdout.write(line('capture  /i/v0/e/', capSingle, 1));
    process.stdout.write(`kafka client alone, 1-message sends: ${fmt(kafkaSingle)} events/s\n`);
    process.stdout.write(
      `${ratioLine('batch path', capBatch.rps * BATCH_SIZE, baseBatch.rps * BATCH_SIZE, 'events/s')}\n`,
    );
    process.stdout.write(
      `${ratioLine('batch path vs kafka client alone', capBatch.rps * BATCH_SIZE, kafkaBatch, 'events/s')}\n`,
    );
    process.stdout.write(`${ratioLine('single-event path', capSingle.rps, baseSingle.rps, 'req/s')}\n`);
    process.stdout.write(
      `${ratioLine('single-event path vs kafka client alone', capSingle.rps, kafkaSingle, 'events/s')}\n`,
    );
    const workers = process.env.CAPTURE_WORKERS || '1';
    process.stdout.write(
      `events acknowledged by Kafka (capture metrics${workers === '1' ? '' : ', one worker of several'}): ${fmt(accepted)}\n`,
    );

    const batchEps = capBatch.rps * BATCH_SIZE;
    const checks: Array<[string, boolean]> = [
      ['batch >= 0.35 of the parse-only server events/s', batchEps >= 0.35 * baseBatch.rps * BATCH_SIZE],
      ['batch >= 0.8 of the kafka client alone', batchEps >= 0.8 * kafkaBatch],
      ['single >= 0.6 of the parse-only server req/s', capSingle.rps >= 0.6 * baseSingle.rps],
      ['no non-2xx or errors', capBatch.non2xx + capSingle.non2xx + capBatch.errors + capSingle.errors === 0],
    ];
    for (const [name, ok] of checks) process.stdout.write(`${ok ? 'PASS' : 'MISS'} ${name}\n`);
    return checks.every(([, ok]) => ok);
  } finally {
    for (const c of children.reverse()) await c.stop();
    redis.disconnect();
    await broker.stop();
    await withMaintenanceClient(serverUrl, (c) =>
      c.query(`DROP DATABASE IF EXISTS ${quoteIdent(dbName)} WITH (FORCE)`),
    ).catch(() => undefined);
  }
}
