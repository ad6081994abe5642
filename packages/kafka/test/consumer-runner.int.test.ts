// The consumer runner against a real dev broker: offsets are committed only after handleBatch
// resolved, a failing batch is retried and stays uncommitted, stop() lets the in-flight batch
// finish and commit, and batches gather what several partitions fetched, each partition in
// order and written by one lane.
import type { Kafka } from 'kafkajs';
import { startDevBroker, type DevBroker } from '@sett/devstack';
import {
  createConsumerRunner,
  createKafka,
  type ConsumerRunner,
  type ConsumerRunnerOptions,
  type PartitionLag,
} from '../src';
import { FAST_GROUP, uniqueGroup, waitFor } from './helpers';
import type { ConsumerStatus } from '../src';

jest.setTimeout(60000);

let broker: DevBroker;
let kafka: Kafka;
const runners: ConsumerRunner[] = [];

beforeAll(async () => {
  broker = await startDevBroker({
    topics: { retried: 1, stopping: 1, lagged: 3, crashing: 1, gathered: 4, capped: 4 },
  });
  kafka = createKafka({ brokers: broker.brokers, clientId: 'consumer-runner-test', logLevel: 'nothing' });
});

afterAll(async () => {
  for (const r of runners) await r.stop().catch(() => undefined);
  await broker?.stop();
});

async function produce(topic: string, values: string[], partition?: number): Promise<void> {
  const producer = kafka.producer({ allowAutoTopicCreation: false });
  await producer.connect();
  await producer.send({
    topic,
    acks: -1,
    messages: values.map((value) => ({ key: null, value, partition })),
  });
  await producer.disconnect();
}

function runner(
  groupId: string,
  topic: string,
  handleBatch: ConsumerRunnerOptions['handleBatch'],
  extra: Partial<ConsumerRunnerOptions> = {},
): ConsumerRunner {
  const r = createConsumerRunner({
    kafka,
    groupId,
    topics: [topic],
    handleBatch,
    ...FAST_GROUP,
    retry: { initialRetryTime: 100, maxRetryTime: 500, retries: 100 },
    ...extra,
  });
  runners.push(r);
  return r;
}

const committed = (lag: PartitionLag[], partition = 0): string | undefined =>
  lag.find((l) => l.partition === partition)?.committedOffset;

it('commits nothing while handleBatch throws, retries the batch, and commits once it succeeds', async () => {
  await produce('retried', ['a', 'b', 'c', 'd', 'e']);
  const groupId = uniqueGroup('retried');

  const firstOffsets: Array<string | undefined> = [];
  const failing = runner(groupId, 'retried', async (batch) => {
    firstOffsets.push(batch.parts.flatMap((p) => p.messages)[0]?.offset);
    throw new Error('database is down');
  });
  await failing.start();
  await waitFor(() => firstOffsets.length >= 3, 'handleBatch to be retried');
  // Every retry starts again from the uncommitted batch.
  expect(new Set(firstOffsets)).toEqual(new Set(['0']));
  expect(committed(await failing.lag())).toBe('-1');
  await failing.stop();
  expect(committed(await runner(groupId, 'retried', async () => undefined).lag())).toBe('-1');

  // A new member of the same group re-reads everything, because nothing was committed.
  const seen: string[] = [];
  const working = runner(groupId, 'retried', async (batch) => {
    for (const m of batch.parts.flatMap((p) => p.messages)) seen.push(`${m.offset}:${m.value?.toString()}`);
  });
  await working.start();
  await waitFor(() => seen.length >= 5, 'the second member to read the uncommitted messages');
  await waitFor(
    async () => committed(await working.lag()) === '5',
    'the offset to be committed after success',
  );
  expect(seen).toEqual(['0:a', '1:b', '2:c', '3:d', '4:e']);
  expect((await working.lag())[0]).toMatchObject({ highWatermark: '5', lag: 0 });
  await working.stop();

  // And a third member starts after the committed offset: it sees only new messages. The marker
  // 'end' goes in after them: once it arrived, anything re-read from before would have too.
  await produce('retried', ['f', 'g', 'end']);
  const third: string[] = [];
  const after = runner(groupId, 'retried', async (batch) => {
    for (const m of batch.parts.flatMap((p) => p.messages)) third.push(`${m.offset}:${m.value?.toString()}`);
  });
  await after.start();
  await waitFor(() => third.includes('7:end'), 'the third member to read up to the marker');
  expect(third).toEqual(['5:f', '6:g', '7:end']);
  await after.stop();
});

it('stop() waits for the in-flight batch and commits it', async () => {
  await produce('stopping', ['1', '2', '3']);
  const groupId = uniqueGroup('stopping');
  let inHandler = false;
  let finished = false;
  const heartbeats: number[] = [];
  const slow = runner(groupId, 'stopping', async () => {
    inHandler = true;
    // Held across heartbeats spanning more than the session timeout: only the runner's
    // heartbeats during the batch keep the partition ours until it commits.
    await waitFor(
      () => heartbeats.length > 1 && heartbeats.at(-1)! - heartbeats[0]! > FAST_GROUP.sessionTimeout,
      'heartbeats spanning the session timeout during the batch',
    );
    finished = true;
  });
  slow.consumer.on(slow.consumer.events.HEARTBEAT, ({ timestamp }) => {
    if (inHandler) heartbeats.push(timestamp);
  });
  await slow.start();
  await waitFor(() => inHandler, 'the batch to start');
  await slow.stop();
  expect(finished).toBe(true);

  const check = runner(groupId, 'stopping', async () => undefined);
  expect(committed(await check.lag())).toBe('3');
});

it('reports lag per partition from committed offsets and high watermarks', async () => {
  await produce('lagged', ['x', 'y'], 0);
  await produce('lagged', ['z'], 2);
  const idle = runner(uniqueGroup('lagged'), 'lagged', async () => undefined);
  expect(await idle.lag()).toEqual([
    { topic: 'lagged', partition: 0, committedOffset: '-1', highWatermark: '2', lag: 2 },
    { topic: 'lagged', partition: 1, committedOffset: '-1', highWatermark: '0', lag: 0 },
    { topic: 'lagged', partition: 2, committedOffset: '-1', highWatermark: '1', lag: 1 },
  ]);
});

it('restarts by itself after a crash kafkajs would not restart from, with backoff, and reports it', async () => {
  await produce('crashing', ['p', 'q']);
  const groupId = uniqueGroup('crashing');
  const restarts: Array<{ restarts: number; delayMs: number; reason: string }> = [];
  const seen: string[] = [];
  const statuses: ConsumerStatus[] = [];
  let throws = 2;
  const r = runner(
    groupId,
    'crashing',
    async (batch) => {
      // A TypeError is unrecoverable for kafkajs: the crash event says restart: false.
      if (throws-- > 0) throw new TypeError("Cannot read properties of undefined (reading 'x')");
      for (const m of batch.parts.flatMap((p) => p.messages)) seen.push(m.value!.toString());
    },
    { restart: { initialMs: 300, maxMs: 1000 }, onRestart: (info) => restarts.push(info) },
  );
  await r.start();
  await waitFor(() => {
    const s = r.status();
    if (!s.consuming) statuses.push(s);
    return restarts.length >= 1 && !s.consuming;
  }, 'the crash to be noticed');
  expect(statuses.at(-1)).toMatchObject({ consuming: false, state: 'restarting' });
  expect(statuses.at(-1)!.reason).toMatch(/crashed: .*Cannot read properties/);
  await waitFor(() => seen.length === 2, 'the batch after two restarts');
  await waitFor(async () => committed(await r.lag()) === '2', 'the commit after the restarts');
  await waitFor(() => r.status().consuming, 'consuming again');
  expect(seen).toEqual(['p', 'q']);
  expect(restarts.map((x) => x.delayMs)).toEqual([300, 600]); // exponential backoff
  expect(r.status()).toMatchObject({ consuming: true, state: 'consuming', restarts: 2 });
  await r.stop();
  expect(r.status()).toMatchObject({ consuming: false, state: 'stopped' });
});

it('gathers what every partition fetched into one batch, each partition in order, and commits them all after it', async () => {
  for (const partition of [0, 1, 2, 3])
    await produce(
      'gathered',
      ['a', 'b', 'c'].map((v) => `${partition}${v}`),
      partition,
    );
  const groupId = uniqueGroup('gathered');
  const batches: string[][][] = [];
  // One lane, and a linger long enough for every partition's first fetch to join the batch.
  const r = runner(
    groupId,
    'gathered',
    async (batch) => {
      batches.push(batch.parts.map((p) => p.messages.map((m) => m.value!.toString())));
    },
    { gather: { maxMessages: 1000, maxWaitMs: 300, concurrency: 1 } },
  );
  await r.start();
  await waitFor(() => batches.flat(2).length >= 12, 'all twelve messages handed over');
  // A batch holding more than one partition's fetch.
  expect(Math.max(...batches.map((b) => b.length))).toBeGreaterThan(1);
  // Each partition's messages in offset order, none twice.
  for (const partition of [0, 1, 2, 3])
    expect(batches.flat(2).filter((v) => v.startsWith(String(partition)))).toEqual(
      ['a', 'b', 'c'].map((v) => `${partition}${v}`),
    );
  await waitFor(
    async () => (await r.lag()).every((l) => l.committedOffset === '3'),
    'every partition committed after its batch',
  );
});

it('keeps a batch under maxMessages (a partition fetch is never split), and each partition in one lane', async () => {
  for (const partition of [0, 1, 2, 3])
    await produce(
      'capped',
      ['a', 'b'].map((v) => `${partition}${v}`),
      partition,
    );
  const groupId = uniqueGroup('capped');
  const batches: Array<Array<{ partition: number; values: string[] }>> = [];
  let inFlight = 0;
  let mostAtOnce = 0;
  const r = runner(
    groupId,
    'capped',
    async (batch) => {
      inFlight++;
      mostAtOnce = Math.max(mostAtOnce, inFlight);
      batches.push(
        batch.parts.map((p) => ({
          partition: p.partition,
          values: p.messages.map((m) => m.value!.toString()),
        })),
      );
      await new Promise((resolve) => setTimeout(resolve, 50));
      inFlight--;
    },
    { gather: { maxMessages: 2, maxWaitMs: 200, concurrency: 2 } },
  );
  await r.start();
  await waitFor(() => batches.flat().flatMap((p) => p.values).length >= 8, 'all eight messages handed over');
  for (const b of batches) expect(b.flatMap((p) => p.values).length).toBeLessThanOrEqual(2);
  // Lanes by partition number: even partitions in one, odd in the other, never mixed.
  for (const b of batches) expect(new Set(b.map((p) => p.partition % 2)).size).toBe(1);
  expect(mostAtOnce).toBeLessThanOrEqual(2);
  await waitFor(
    async () => (await r.lag()).every((l) => l.committedOffset === '2'),
    'every partition committed',
  );
});
