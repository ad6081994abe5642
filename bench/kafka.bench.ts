// `pnpm bench kafka`: the Kafka clients Sett could produce with, side by side on the same
// capture-shaped messages: 200k distinct ~400 B JSON values (encodeCaptureMessage, as capture
// builds them) keyed `<token>:<distinct_id>` over 20k ids, acks=all, to a private dev broker
// with 16 partitions. Each candidate runs in its own process, after a warm-up of 20k messages:
// - kafkajs raw: sendBatch of 1,000 messages, 8 requests in flight (the client at its best);
// - Sett over kafkajs: createKafkajsProducer with capture's settings, 50 concurrent callers each
//   handing over 100 messages at a time (what capture does with 50 concurrent requests);
// - node-rdkafka raw: produce() per message, delivery reports counted, no wrapper;
// - Sett over node-rdkafka: createRdkafkaProducer, the same 50 callers x 100 messages.
// Printed per candidate: messages/s and its ratio to the fastest, CPU per message on the event
// loop (the main thread, from /proc) and in the whole process (librdkafka's threads included),
// and bytes per message on the wire. Raw vs Sett on one client is Sett's own cost; a second
// table runs Sett over node-rdkafka with each compression codec.
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import {
  createKafka,
  createKafkajsProducer,
  createProducer,
  createRdkafkaProducer,
  encodeCaptureMessage,
  loadRdkafka,
  type BatchingProducer,
  type KafkaCompression,
  type ProducerMessage,
  type RdkafkaModule,
} from '@sett/kafka';
import { startDevBroker } from '@sett/devstack';
import { fmt } from './lib';

const ROLE_ENV = 'SETT_KAFKA_BENCH_ROLE';
const MESSAGES = 200_000;
const WARMUP = 20_000;
const DISTINCT_IDS = 20_000;
const CALLERS = 50;
const PER_CALL = 100;
const TOPIC = 'events_plugin_ingestion';

type Candidate =
  | 'kafkajs-raw'
  | 'sett-kafkajs'
  | 'rdkafka-raw'
  | 'sett-rdkafka'
  | 'import-retention'
  | 'consume-kafkajs'
  | 'consume-rdkafka';
type Job = { candidate: Candidate; brokers: string; compression: KafkaCompression; inFlight?: number };
type Result = {
  messages: number;
  seconds: number;
  cpuMainUs: number;
  cpuTotalUs: number;
  wireBytes: number | null;
};

/** Capture-shaped messages, all distinct (uuid, time, url, session differ). */
function messages(count: number, offset: number): ProducerMessage[] {
  const token = 'phc_benchkafkaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa';
  const now = new Date().toISOString();
  return Array.from({ length: count }, (_, j) => {
    const n = j + offset;
    const distinctId = `user-${(n * 7919) % DISTINCT_IDS}`;
    const value = encodeCaptureMessage({
      uuid: `0190${n.toString(16).padStart(4, '0').slice(-4)}-0000-7000-8000-${n.toString(16).padStart(12, '0')}`,
      token,
      distinct_id: distinctId,
      ip: '127.0.0.1',
      now,
      sent_at: null,
      event: n % 5 === 0 ? 'signed_up' : '$pageview',
      properties: {
        $current_url: `https://app.example.com/docs/page-${n % 97}?ref=${n % 17}`,
        $browser: ['Chrome', 'Firefox', 'Safari', 'Edge'][n % 4],
        $os: n % 2 ? 'Mac OS X' : 'Windows',
        $lib: 'web',
        $session_id: `01900000-0000-7000-8000-${String(n % 1000).padStart(12, '0')}`,
      },
      timestamp: new Date(Date.now() - (n % 60) * 1000).toISOString(),
      historical_migration: false,
    });
    return { key: `${token}:${distinctId}`, value: Buffer.from(value) };
  });
}

/** CPU time of the main thread (the event loop), in µs, from /proc (clock ticks of 10 ms). */
function mainThreadCpuUs(): number {
  const stat = fs.readFileSync(`/proc/self/task/${process.pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10_000;
}

async function measure(
  run: (batch: ProducerMessage[]) => Promise<void>,
  wire: () => number | null,
  warmUp = true,
) {
  if (warmUp) await run(messages(WARMUP, 10_000_000));
  const batch = warmUp ? messages(MESSAGES, 0) : [];
  const wireBefore = wire();
  const cpu0 = process.cpuUsage();
  const main0 = mainThreadCpuUs();
  const t0 = process.hrtime.bigint();
  await run(batch);
  const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
  const cpu = process.cpuUsage(cpu0);
  const wireAfter = wire();
  return {
    messages: MESSAGES,
    seconds,
    cpuMainUs: mainThreadCpuUs() - main0,
    cpuTotalUs: cpu.user + cpu.system,
    wireBytes: wireBefore === null || wireAfter === null ? null : wireAfter - wireBefore,
  };
}

/** 50 callers, each handing over 100 messages and waiting for them, until all are sent. */
async function callers(producer: BatchingProducer, batch: ProducerMessage[], topic = TOPIC): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: CALLERS }, async () => {
      while (next < batch.length) {
        const slice = batch.slice(next, (next += PER_CALL));
        await producer.send(topic, slice);
      }
    }),
  );
}

/**
 * A 1M-event `sett import` as the dev broker sees it: 4 lanes sending 10,000 events at a time
 * (the import's 4 MB requests) to the historical topic through the shipped producer; then the
 * log start of every partition: above 0 means the broker dropped acknowledged events.
 */
async function importRetention(job: Job): Promise<Result & { dropped: number; partitions: number }> {
  const producer = createProducer({
    brokers: job.brokers.split(','),
    clientId: 'bench-retention',
    compression: job.compression,
    lingerMs: 1,
  });
  await producer.connect();
  let next = 0;
  const total = 1_000_000;
  const t0 = process.hrtime.bigint();
  await Promise.all(
    Array.from({ length: 4 }, async () => {
      while (next < total) {
        const start = next;
        next += 10_000;
        await producer.send('events_plugin_ingestion_historical', messages(10_000, start));
      }
    }),
  );
  const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
  await producer.disconnect();
  const admin = createKafka({
    brokers: job.brokers.split(','),
    clientId: 'bench-retention',
    logLevel: 'nothing',
  }).admin();
  await admin.connect();
  const offsets = await admin.fetchTopicOffsets('events_plugin_ingestion_historical');
  await admin.disconnect();
  const dropped = offsets.reduce((n, o) => n + Number(o.low), 0);
  const stored = offsets.reduce((n, o) => n + Number(o.high) - Number(o.low), 0);
  return {
    messages: stored,
    seconds,
    cpuMainUs: 0,
    cpuTotalUs: 0,
    wireBytes: null,
    dropped,
    partitions: offsets.length,
  };
}

type RdkafkaConsumer = {
  connect(opts: object, cb: (e: Error | null) => void): void;
  subscribe(topics: string[]): void;
  consume(n: number, cb: (e: Error | null, messages: unknown[]) => void): void;
  disconnect(cb: () => void): void;
};

/**
 * Consuming: the topic `consume-<codec>` is filled first (200k messages, node-rdkafka, that
 * codec), then read from the start by a fresh group, timed until every message was handed over:
 * kafkajs's eachBatch (what ingestion runs) or node-rdkafka's KafkaConsumer.consume(1000).
 */
async function consume(job: Job): Promise<Result> {
  const topic = `consume-${job.compression}`;
  const brokers = job.brokers.split(',');
  const fill = createRdkafkaProducer({
    brokers,
    clientId: 'bench-fill',
    compression: job.compression,
    lingerMs: 5,
  });
  await fill.connect();
  await callers(fill, messages(MESSAGES, 0), topic);
  await fill.disconnect();
  // Uncompressed, 200k messages are more than the dev broker keeps per partition (~5 MB): read
  // back what it holds.
  const admin = createKafka({ brokers, clientId: 'bench-consume', logLevel: 'nothing' }).admin();
  await admin.connect();
  const held = (await admin.fetchTopicOffsets(topic)).reduce((n, o) => n + Number(o.high) - Number(o.low), 0);
  await admin.disconnect();
  const groupId = `bench-${job.candidate}-${Date.now()}`;
  if (job.candidate === 'consume-kafkajs') {
    const kafka = createKafka({ brokers, clientId: 'bench-consume', logLevel: 'nothing' });
    const consumer = kafka.consumer({
      groupId,
      sessionTimeout: 3000,
      heartbeatInterval: 300,
      maxWaitTimeInMs: 200,
      maxBytesPerPartition: 10 * 1024 * 1024,
    });
    await consumer.connect();
    await consumer.subscribe({ topics: [topic], fromBeginning: true });
    let seen = 0;
    let done: () => void = () => undefined;
    const all = new Promise<void>((resolve) => (done = resolve));
    let started: Promise<void> | undefined;
    const result = measure(
      async () => {
        started ??= consumer.run({
          partitionsConsumedConcurrently: 4,
          eachBatch: async ({ batch }) => {
            seen += batch.messages.length;
            if (seen >= held) done();
          },
        });
        await all;
      },
      () => null,
      false,
    );
    const r = await result;
    await consumer.disconnect();
    return { ...r, messages: held };
  }
  const Kafka = (
    loadRdkafka() as unknown as { module: { KafkaConsumer: new (c: object, t: object) => RdkafkaConsumer } }
  ).module;
  const consumer = new Kafka.KafkaConsumer(
    { 'metadata.broker.list': job.brokers, 'group.id': groupId, 'enable.auto.commit': false },
    { 'auto.offset.reset': 'earliest' },
  );
  await new Promise<void>((resolve, reject) => consumer.connect({}, (e) => (e ? reject(e) : resolve())));
  consumer.subscribe([topic]);
  const r = await measure(
    async () => {
      let seen = 0;
      while (seen < held)
        seen += await new Promise<number>((resolve, reject) =>
          consumer.consume(1000, (e, batch) => (e ? reject(e) : resolve(batch.length))),
        );
    },
    () => null,
    false,
  );
  await new Promise<void>((resolve) => consumer.disconnect(() => resolve()));
  return { ...r, messages: held };
}

async function role(job: Job): Promise<Result> {
  if (job.candidate === 'import-retention') return importRetention(job);
  if (job.candidate === 'consume-kafkajs' || job.candidate === 'consume-rdkafka') return consume(job);
  const brokers = job.brokers.split(',');
  if (job.candidate === 'kafkajs-raw' || job.candidate === 'sett-kafkajs') {
    const kafka = createKafka({ brokers, clientId: 'bench-kafka', logLevel: 'error' });
    if (job.candidate === 'sett-kafkajs') {
      const producer = createKafkajsProducer({
        kafka,
        lingerMs: 1,
        maxBatchMessages: 2000,
        compression: job.compression,
      });
      await producer.connect();
      const result = await measure(
        (b) => callers(producer, b),
        () => null,
      );
      await producer.disconnect();
      return result;
    }
    const producer = kafka.producer({ idempotent: false, allowAutoTopicCreation: false });
    await producer.connect();
    // kafkajs's CompressionTypes: 0 none, 1 gzip (the only codec it has built in).
    const compression = job.compression === 'gzip' ? 1 : 0;
    const result = await measure(
      async (batch) => {
        let next = 0;
        await Promise.all(
          Array.from({ length: 8 }, async () => {
            while (next < batch.length) {
              const slice = batch.slice(next, (next += 1000));
              await producer.sendBatch({
                acks: -1,
                compression,
                topicMessages: [{ topic: TOPIC, messages: slice }],
              });
            }
          }),
        );
      },
      () => null,
    );
    await producer.disconnect();
    return result;
  }

  // node-rdkafka: bytes on the wire from librdkafka's statistics (per broker txbytes).
  let txbytes = 0;
  const onStats = ({ message }: { message: string }) => {
    const stats = JSON.parse(message) as { brokers: Record<string, { txbytes: number }> };
    txbytes = Object.values(stats.brokers).reduce((n, b) => n + b.txbytes, 0);
  };
  const statsNow = async () => {
    await new Promise((r) => setTimeout(r, 250));
    return txbytes;
  };
  if (job.candidate === 'sett-rdkafka') {
    const producer = createRdkafkaProducer({
      brokers,
      clientId: 'bench-kafka',
      lingerMs: 1,
      maxBatchMessages: 2000,
      compression: job.compression,
      maxInFlightRequests: job.inFlight ?? 1,
    });
    await producer.connect();
    const result = await measure(
      (b) => callers(producer, b),
      () => null,
    );
    await producer.disconnect();
    return result;
  }
  const Kafka_ = (loadRdkafka() as { module: RdkafkaModule }).module;
  const producer = new Kafka_.Producer({
    'metadata.broker.list': job.brokers,
    acks: -1,
    'enable.idempotence': false,
    'linger.ms': 1,
    'batch.num.messages': 2000,
    'compression.codec': job.compression,
    partitioner: 'murmur2_random',
    'max.in.flight.requests.per.connection': job.inFlight ?? 1,
    'statistics.interval.ms': 100,
    dr_cb: true,
  });
  producer.on('event.stats', onStats);
  await new Promise<void>((resolve, reject) => producer.connect({}, (e) => (e ? reject(e) : resolve())));
  let acked = 0;
  let failed = 0;
  producer.on('delivery-report', (error) => (error ? failed++ : acked++));
  const poller = setInterval(() => producer.poll(), 1);
  const result = await measure(
    async (batch) => {
      const target = acked + failed + batch.length;
      for (const m of batch) {
        for (;;) {
          try {
            producer.produce(TOPIC, null, m.value as Buffer, m.key, null, undefined);
            break;
          } catch {
            await new Promise((r) => setTimeout(r, 1)); // queue full: let deliveries drain
          }
        }
      }
      while (acked + failed < target) await new Promise((r) => setTimeout(r, 1));
      if (failed > 0) throw new Error(`${failed} messages failed`);
    },
    () => txbytes,
  );
  const wireBytes = result.wireBytes === null ? null : (await statsNow()) - (txbytes - result.wireBytes);
  clearInterval(poller);
  await new Promise<void>((resolve) => producer.disconnect(5000, () => resolve()));
  return { ...result, wireBytes };
}

if (process.env[ROLE_ENV]) {
  void role(JSON.parse(process.env[ROLE_ENV]!) as Job).then(
    (result) => {
      process.stdout.write(`${JSON.stringify(result)}\n`);
      process.exit(0);
    },
    (err: Error) => {
      process.stderr.write(`kafka bench role failed: ${err.stack}\n`);
      process.exit(1);
    },
  );
}

function runRole(job: Job): Promise<Result> {
  return new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      ['--import', 'tsx', __filename],
      { env: { ...process.env, [ROLE_ENV]: JSON.stringify(job) }, maxBuffer: 1 << 20 },
      (err, stdout, stderr) => {
        if (err) return reject(new Error(`${job.candidate} failed: ${err.message}\n${stderr}`));
        resolve(JSON.parse(stdout.trim().split('\n').pop() ?? '') as Result);
      },
    );
  });
}

type Row = { label: string; job: Job; result?: Result };

function printTable(title: string, rows: Row[]): void {
  const perSecond = (r: Result) => r.messages / r.seconds;
  const fastest = Math.max(...rows.map((r) => (r.result ? perSecond(r.result) : 0)));
  process.stdout.write(`\n${title}\n`);
  process.stdout.write(
    `| candidate | msgs/s | ratio to fastest | event-loop CPU µs/msg | total CPU µs/msg | bytes/msg on the wire |\n|---|---|---|---|---|---|\n`,
  );
  for (const { label, result: r } of rows) {
    if (!r) {
      process.stdout.write(`| ${label} | (not available) | | | | |\n`);
      continue;
    }
    const wire = r.wireBytes === null ? 'n/a' : (r.wireBytes / r.messages).toFixed(0);
    process.stdout.write(
      `| ${label} | ${fmt(perSecond(r))} | ${(perSecond(r) / fastest).toFixed(2)} | ${(r.cpuMainUs / r.messages).toFixed(1)} | ${(r.cpuTotalUs / r.messages).toFixed(1)} | ${wire} |\n`,
    );
  }
}

export async function run(): Promise<boolean> {
  const broker = await startDevBroker({
    partitions: 16,
    topics: { 'consume-none': 16, 'consume-lz4': 16, 'consume-zstd': 16 },
  });
  const rdkafka = !('error' in loadRdkafka());
  try {
    const sample = messages(1000, 0);
    const avg = sample.reduce((n, m) => n + (m.value as Buffer).length, 0) / sample.length;
    process.stdout.write(
      `${MESSAGES.toLocaleString('en-US')} messages of ~${Math.round(avg)} B, ${DISTINCT_IDS.toLocaleString('en-US')} keys, acks=all, dev broker with 16 partitions, node-rdkafka ${rdkafka ? 'built' : 'NOT built'}\n`,
    );
    const job = (candidate: Candidate, compression: KafkaCompression = 'none', inFlight?: number): Job => ({
      candidate,
      brokers: broker.bootstrap,
      compression,
      inFlight,
    });
    const clients: Row[] = [
      { label: 'kafkajs raw (sendBatch 1,000 x 8 in flight)', job: job('kafkajs-raw') },
      { label: 'Sett over kafkajs (50 callers x 100)', job: job('sett-kafkajs') },
      { label: 'node-rdkafka raw (produce per message)', job: job('rdkafka-raw') },
      { label: 'Sett over node-rdkafka (50 callers x 100)', job: job('sett-rdkafka') },
      { label: 'Sett over node-rdkafka, 5 requests in flight', job: job('sett-rdkafka', 'none', 5) },
    ];
    for (const row of clients)
      if (rdkafka || !row.job.candidate.includes('rdkafka')) row.result = await runRole(row.job);
    printTable('Clients, no compression:', clients);

    if (rdkafka) {
      const codecs: Row[] = (['none', 'lz4', 'zstd', 'gzip'] as const).map((c) => ({
        label: `node-rdkafka raw, ${c}`,
        job: job('rdkafka-raw', c),
      }));
      for (const row of codecs) row.result = await runRole(row.job);
      printTable('Compression (node-rdkafka raw; bytes from librdkafka statistics):', codecs);
    }

    if (rdkafka) {
      const consumers: Row[] = [
        { label: 'kafkajs eachBatch, none', job: job('consume-kafkajs', 'none') },
        { label: 'kafkajs eachBatch, lz4 (lz4js)', job: job('consume-kafkajs', 'lz4') },
        { label: 'kafkajs eachBatch, zstd (fzstd)', job: job('consume-kafkajs', 'zstd') },
        { label: 'node-rdkafka consume(1000), zstd', job: job('consume-rdkafka', 'zstd') },
      ];
      for (const row of consumers) row.result = await runRole(row.job);
      printTable(
        'Consuming from the start, a fresh group, 16 partitions (200k produced; uncompressed, the dev broker keeps fewer):',
        consumers,
      );
    }

    // The dev broker keeps ~5 MB and 100,000 record batches per partition (librdkafka's mock
    // has no setting for it): what a 1M-event import leaves of itself there.
    const retention = (await runRole({
      candidate: 'import-retention',
      brokers: broker.bootstrap,
      compression: 'lz4',
    })) as Result & {
      dropped: number;
      partitions: number;
    };
    process.stdout.write(
      `\n1,000,000-event import to the historical topic (${retention.partitions} partitions, lz4 (the default), the shipped client): ${fmt(retention.messages)} kept, ${fmt(retention.dropped)} dropped by the dev broker's retention, ${fmt(1_000_000 / retention.seconds)} msgs/s\n`,
    );
    return retention.dropped === 0;
  } finally {
    await broker.stop();
  }
}
