// The producer suite, run against both clients Sett can produce with (node-rdkafka, the one it
// ships, and kafkajs, its fallback) on a real dev broker: coalescing of concurrent sends,
// exactly-once and per-key order on arrival, splitting of oversized calls, failure within the
// send timeout while the broker is down, readiness, and compressed batches read back by the
// kafkajs consumer. The kafkajs producer's own batching rules close the file.
import type { Kafka } from 'kafkajs';
import { startDevBroker, type DevBroker } from '@sett/devstack';
import {
  createKafka,
  createKafkajsProducer,
  createRdkafkaProducer,
  loadRdkafka,
  partitionForKey,
  probeIdempotence,
  ProduceError,
  type BatchingProducer,
  type KafkaClientName,
  type KafkajsProducer,
  type ProducerTuning,
} from '../src';
import { readAll, waitFor } from './helpers';

jest.setTimeout(60000);

let broker: DevBroker;
let kafka: Kafka;
const producers: BatchingProducer[] = [];

const CLIENTS: KafkaClientName[] = ['node-rdkafka', 'kafkajs'];

beforeAll(async () => {
  const topics: Record<string, number> = { inflight: 3, 'ordered-idempotent': 4 };
  for (const c of CLIENTS)
    for (const t of [
      'coalesce',
      'ordered',
      'split',
      'down',
      'compressed-zstd',
      'compressed-lz4',
      'compressed-gzip',
      'placement',
    ])
      topics[`${t}-${c}`] = t === 'split' ? 2 : 4;
  broker = await startDevBroker({ topics });
  kafka = createKafka({ brokers: broker.brokers, clientId: 'producer-test', logLevel: 'error' });
});

afterAll(async () => {
  for (const p of producers) if (p.isConnected()) await p.disconnect().catch(() => undefined);
  await broker?.stop();
});

/** A connected producer of `client` on `brokers` (default: the shared broker). */
async function connected(
  client: KafkaClientName,
  options: ProducerTuning = {},
  brokers: string[] = broker.brokers,
): Promise<BatchingProducer> {
  const producer =
    client === 'node-rdkafka'
      ? createRdkafkaProducer({ brokers, clientId: 'producer-test', statisticsIntervalMs: 100, ...options })
      : createKafkajsProducer({
          kafka: createKafka({
            brokers,
            clientId: 'producer-test',
            logLevel: 'nothing',
            retry: { retries: 1, initialRetryTime: 100 },
          }),
          ...options,
        });
  producers.push(producer);
  await producer.connect();
  return producer;
}

/** N concurrent single-message sends over `keys` keys; value = "key:seq" with seq rising per key. */
function concurrentSends(
  producer: BatchingProducer,
  topic: string,
  n: number,
  keys: number,
): Promise<void[]> {
  const seq = new Map<string, number>();
  return Promise.all(
    Array.from({ length: n }, (_, i) => {
      const key = `key-${i % keys}`;
      const s = seq.get(key) ?? 0;
      seq.set(key, s + 1);
      return producer.send(topic, [{ key, value: `${key}:${s}` }]);
    }),
  );
}

function expectExactlyOnceInOrder(
  received: { key: string | null; value: string; partition: number }[],
  n: number,
  keys: number,
): void {
  expect(received).toHaveLength(n);
  expect(new Set(received.map((r) => r.value)).size).toBe(n);
  for (let k = 0; k < keys; k++) {
    const key = `key-${k}`;
    const mine = received.filter((r) => r.key === key);
    // One key, one partition, and within it the order of the send() calls.
    expect(new Set(mine.map((r) => r.partition)).size).toBe(1);
    expect(mine.map((r) => Number(r.value.split(':')[1]))).toEqual(mine.map((_, i) => i));
  }
}

/** Produce requests so far; node-rdkafka's come from its statistics, a moment behind. */
async function settledRequests(producer: BatchingProducer): Promise<number> {
  if (producer.client === 'kafkajs') return producer.stats().requests;
  let last = -1;
  await waitFor(async () => {
    const now = producer.stats().requests;
    const stable = now > 0 && now === last;
    last = now;
    await new Promise((r) => setTimeout(r, 150));
    return stable;
  }, 'node-rdkafka statistics');
  return last;
}

describe.each(CLIENTS)('%s producer', (client) => {
  const topic = (name: string) => `${name}-${client}`;

  it('names its client', async () => {
    expect((await connected(client)).client).toBe(client);
  });

  it('coalesces concurrent single-message sends into few produce requests, each message delivered once', async () => {
    // A linger long enough that a loaded machine hands all 300 over within it.
    const producer = await connected(client, { lingerMs: 200 });
    await concurrentSends(producer, topic('coalesce'), 300, 10);

    // At most one request per partition (4): librdkafka puts one partition in each Produce
    // request, kafkajs all of them in one.
    expect(await settledRequests(producer)).toBeLessThanOrEqual(4);
    expect(producer.stats()).toMatchObject({ messagesAcked: 300, messagesFailed: 0, pendingMessages: 0 });
    expectExactlyOnceInOrder(await readAll(kafka, topic('coalesce'), 300), 300, 10);
  });

  it('keeps per-key order across many requests when the batch cap is small', async () => {
    const producer = await connected(client, { lingerMs: 5, maxBatchMessages: 40 });
    await concurrentSends(producer, topic('ordered'), 1000, 7);

    // 1000 messages at most 40 per request (per partition for node-rdkafka): many requests.
    expect(await settledRequests(producer)).toBeGreaterThanOrEqual(7);
    expectExactlyOnceInOrder(await readAll(kafka, topic('ordered'), 1000), 1000, 7);
  });

  it('puts each key on the partition kafkajs and the Java client choose (murmur2)', async () => {
    // Both clients must agree: capture processes may run either, and a key placed on two
    // partitions loses its order. node-rdkafka placed keys by CRC32 while its partitioner
    // setting was given among the global ones.
    const producer = await connected(client);
    const keys = Array.from({ length: 64 }, (_, i) => `token:user-${i}`);
    await producer.send(
      topic('placement'),
      keys.map((key) => ({ key, value: key })),
    );
    const received = await readAll(kafka, topic('placement'), keys.length);
    const placed = Object.fromEntries(received.map((r) => [r.key, r.partition]));
    expect(placed).toEqual(Object.fromEntries(keys.map((key) => [key, partitionForKey(key, 4)])));
  });

  it('splits one call larger than the cap across requests and resolves only when all parts are acknowledged', async () => {
    const producer = await connected(client, { maxBatchMessages: 2000, maxBatchBytes: 100_000 });
    const messages = Array.from({ length: 2500 }, (_, i) => ({
      key: 'split',
      value: `split:${String(i).padStart(6, '0')}${'x'.repeat(80)}`,
    }));
    await producer.send(topic('split'), messages);
    // Resolved means acknowledged: nothing of the call is still pending.
    expect(producer.stats()).toMatchObject({ messagesAcked: 2500, pendingMessages: 0 });

    // ~120 bytes each against a 100 KB cap: three or more requests.
    expect(await settledRequests(producer)).toBeGreaterThanOrEqual(3);
    const received = await readAll(kafka, topic('split'), 2500);
    expect(received.map((r) => r.value)).toEqual(messages.map((m) => m.value));
  });

  it('refuses a message over the size limit without sending anything', async () => {
    const producer = await connected(client, { maxMessageBytes: 1000 });
    await expect(
      producer.send(topic('coalesce'), [{ key: null, value: 'x'.repeat(2000) }]),
    ).rejects.toMatchObject({ code: 'too_large' });
    expect(producer.stats()).toMatchObject({ messagesAcked: 0, messagesFailed: 0, pendingMessages: 0 });
  });

  it.each(['zstd', 'lz4', 'gzip'] as const)(
    'produces with compression %s (kafkajs: gzip only, else none), read back by the kafkajs consumer',
    async (compression) => {
      const producer = await connected(client, { compression });
      const messages = Array.from({ length: 500 }, (_, i) => ({
        key: `key-${i % 5}`,
        value: JSON.stringify({
          i,
          event: '$pageview',
          properties: { $current_url: `https://example.com/${i}` },
        }),
      }));
      await producer.send(topic(`compressed-${compression}`), messages);
      const received = await readAll(kafka, topic(`compressed-${compression}`), 500);
      expect(received.map((r) => r.value).sort()).toEqual(messages.map((m) => m.value).sort());
    },
  );

  it('rejects every send within sendTimeoutMs while the broker is down, and recovers when it is back', async () => {
    const own = await startDevBroker({ topics: { down: 2 } });
    try {
      const producer = await connected(client, { sendTimeoutMs: 3000 }, own.brokers);
      await producer.send('down', [{ key: 'warm', value: 'up' }]);

      await own.setBrokerDown(1);
      const started = Date.now();
      const outcomes = await Promise.all(
        Array.from({ length: 50 }, (_, i) =>
          producer.send('down', [{ key: `k${i % 5}`, value: `down-${i}` }]).then(
            () => ({ ok: true as const, ms: Date.now() - started }),
            (error: unknown) => ({ ok: false as const, ms: Date.now() - started, error }),
          ),
        ),
      );
      expect(outcomes.filter((o) => o.ok)).toEqual([]);
      for (const o of outcomes) {
        expect(o.ms).toBeLessThan(3000 + 500);
        if (!o.ok) expect(o.error).toBeInstanceOf(ProduceError);
      }

      await own.setBrokerUp(1);
      // Both clients reconnect by themselves; allow them a few attempts.
      let recovered = false;
      for (let attempt = 0; attempt < 10 && !recovered; attempt++) {
        recovered = await producer.send('down', [{ key: 'after', value: 'back' }]).then(
          () => true,
          () => false,
        );
      }
      expect(recovered).toBe(true);
    } finally {
      await own.stop();
    }
  });

  it('rejects sends when the broker process is gone', async () => {
    const own = await startDevBroker({ topics: { stopped: 1 } });
    const producer = await connected(client, { sendTimeoutMs: 2000 }, own.brokers);
    await producer.send('stopped', [{ key: 'k', value: 'before' }]);
    await own.stop();

    const started = Date.now();
    await expect(producer.send('stopped', [{ key: 'k', value: 'after' }])).rejects.toBeInstanceOf(
      ProduceError,
    );
    expect(Date.now() - started).toBeLessThan(2000 + 500);
    expect(producer.stats().messagesAcked).toBe(1);
  });

  it('reports health from produce outcomes, probes when idle, and never keeps checkReady waiting', async () => {
    const own = await startDevBroker({ topics: { health: 2 } });
    const probeTimeoutMs = 500;
    const producer = await connected(
      client,
      {
        sendTimeoutMs: 2000,
        readiness: {
          freshMs: 200,
          failureHoldMs: 300,
          probeTimeoutMs,
          probeCacheMs: 100,
          probeTopics: ['health'],
        },
      },
      own.brokers,
    );
    /** checkReady's outcome and how long it took. */
    const check = async () => {
      const started = Date.now();
      const error = await producer.checkReady().then(
        () => null,
        (e: unknown) => (e as Error).message,
      );
      return { error, ms: Date.now() - started };
    };
    try {
      await producer.send('health', [{ key: 'k', value: 'v' }]);
      expect(producer.health()).toMatchObject({ connected: true, consecutiveFailures: 0, lastError: null });
      expect(producer.health().lastSuccessAt).toEqual(expect.any(Number));
      expect((await check()).error).toBeNull();

      await own.setBrokerDown(1);
      await expect(producer.send('health', [{ key: 'k', value: 'lost' }])).rejects.toBeInstanceOf(
        ProduceError,
      );
      expect(producer.health().consecutiveFailures).toBeGreaterThan(0);
      expect(producer.health().lastError).toEqual(expect.any(String));
      // Right after a failed request: not ready, without a probe.
      const held = await check();
      expect(held.error).toMatch(/fail|kafka/);
      expect(held.ms).toBeLessThan(100);

      // Idle and down: every check (concurrent ones share one probe) fails within the probe bound.
      await waitFor(async () => {
        const results = await Promise.all(Array.from({ length: 10 }, check));
        for (const r of results) {
          expect(r.error).not.toBeNull();
          expect(r.ms).toBeLessThan(probeTimeoutMs + 200);
        }
        return results.some((r) => /probe/.test(r.error ?? ''));
      }, 'a failing probe');

      // Up again: ready by itself, no send needed.
      await own.setBrokerUp(1);
      await waitFor(async () => (await check()).error === null, 'ready after the broker is back');
      expect(producer.health().consecutiveFailures).toBe(0);
      await producer.send('health', [{ key: 'k', value: 'after' }]);

      await producer.disconnect();
      expect((await check()).error).toMatch(/not connected/);
    } finally {
      await own.stop();
    }
  });
});

describe('node-rdkafka idempotence', () => {
  it('auto: the dev broker assigns a producer id, so 5 requests go in flight and per-key order holds', async () => {
    const producer = await connected('node-rdkafka', {
      idempotence: 'auto',
      lingerMs: 5,
      maxBatchMessages: 40,
    });
    expect(producer.stats()).toMatchObject({ idempotent: true, maxInFlight: 5 });
    await concurrentSends(producer, 'ordered-idempotent', 2000, 7);
    expect(await settledRequests(producer)).toBeGreaterThanOrEqual(7);
    expectExactlyOnceInOrder(await readAll(kafka, 'ordered-idempotent', 2000), 2000, 7);
  });

  it('auto: a broker that cannot assign one (an old protocol version) keeps 1 in flight', async () => {
    // librdkafka told the broker is 0.9 (no InitProducerId): no producer id is ever assigned.
    const old = { 'api.version.request': false, 'broker.version.fallback': '0.9.0' };
    const producer = await connected('node-rdkafka', {
      idempotence: 'auto',
      librdkafka: old,
    } as ProducerTuning);
    expect(producer.stats()).toMatchObject({ idempotent: false, maxInFlight: 1 });
    // (The dev broker refuses that old a Produce version, so nothing is produced here: sending
    // with one request in flight is what every other test in this file does.)
  });

  it('off (the default) and on are taken as said', async () => {
    expect((await connected('node-rdkafka')).stats()).toMatchObject({ idempotent: false, maxInFlight: 1 });
    expect((await connected('node-rdkafka', { idempotence: 'on' })).stats()).toMatchObject({
      idempotent: true,
      maxInFlight: 5,
    });
  });

  it('the probe says no, with the reason, when no broker answers', async () => {
    const loaded = loadRdkafka();
    if ('error' in loaded) throw loaded.error;
    const started = Date.now();
    const probe = await probeIdempotence(
      loaded.module,
      { 'metadata.broker.list': '127.0.0.1:1', 'enable.idempotence': true },
      1500,
    );
    expect(probe.assigned).toBe(false);
    expect(probe.reason).toBeTruthy();
    expect(Date.now() - started).toBeLessThan(10_000);
  });
});

describe('kafkajs producer batching', () => {
  /** Counts Produce requests on the wire, independently of the producer's own stats. */
  function countProduceRequests(producer: KafkajsProducer): () => number {
    let count = 0;
    producer.producer.on(producer.producer.events.REQUEST, ({ payload }) => {
      if (payload.apiName === 'Produce') count++;
    });
    return () => count;
  }

  it('puts concurrent sends in exactly one request, and its counts match the wire', async () => {
    const producer = createKafkajsProducer({ kafka, lingerMs: 20 });
    producers.push(producer);
    await producer.connect();
    const produceRequests = countProduceRequests(producer);
    await concurrentSends(producer, 'coalesce-kafkajs', 300, 10);
    expect(producer.stats()).toMatchObject({ requests: 1, largestBatch: 300, inFlight: 0 });
    expect(produceRequests()).toBe(1);
  });

  it('sends what arrived during an in-flight request as soon as it is answered, without a fresh linger', async () => {
    // A linger far beyond the test's patience: only the in-flight rule can send the second batch.
    const producer: KafkajsProducer = createKafkajsProducer({
      kafka,
      lingerMs: 600_000,
      maxBatchMessages: 10,
    });
    producers.push(producer);
    await producer.connect();
    const first = Array.from({ length: 10 }, (_, i) => ({ key: `k${i % 3}`, value: `first-${i}` }));
    const second = Array.from({ length: 25 }, (_, i) => ({ key: `k${i % 3}`, value: `second-${i}` }));
    const firstSent = producer.send('inflight', first); // full batch: goes at once
    expect(producer.stats().inFlight).toBe(1);
    const secondSent = second.map((m) => producer.send('inflight', [m])); // fills while in flight
    await Promise.all([firstSent, ...secondSent]);

    // 10 + 25 at 10 per request; the last 5 did not wait for the linger either.
    expect(producer.stats()).toMatchObject({ requests: 4, messagesAcked: 35, pendingMessages: 0 });
    const received = await readAll(kafka, 'inflight', 35);
    for (const key of ['k0', 'k1', 'k2']) {
      const values = received.filter((r) => r.key === key).map((r) => r.value);
      const sent = [...first, ...second].filter((m) => m.key === key).map((m) => m.value);
      expect(values).toEqual(sent);
    }
  });
});
