// Checks the dev broker does what our consumers rely on, with plain kafkajs: group membership,
// offset commits, and a second member resuming from the committed offset.
import type { Consumer, Kafka } from 'kafkajs';
import { startDevBroker, type DevBroker } from '@sett/devstack';
import { createKafka } from '../src';
import { FAST_GROUP, toReceived, uniqueGroup, waitFor, type Received } from './helpers';

jest.setTimeout(60000);

const TOPIC = 'kafkajs_group_test';
let broker: DevBroker;
let kafka: Kafka;
const cleanup: Array<() => Promise<void>> = [];

beforeAll(async () => {
  broker = await startDevBroker({ topics: { [TOPIC]: 1 } });
  kafka = createKafka({ brokers: broker.brokers, clientId: 'kafkajs-group-test', logLevel: 'error' });
});

afterAll(async () => {
  // Clients first: a kafkajs client whose broker vanished retries for a long time.
  for (const fn of cleanup.reverse()) await fn().catch(() => undefined);
  await broker?.stop();
});

async function consume(groupId: string, onMessage: (r: Received) => void): Promise<Consumer> {
  const consumer = kafka.consumer({ groupId, ...FAST_GROUP });
  cleanup.push(() => consumer.disconnect());
  await consumer.connect();
  await consumer.subscribe({ topics: [TOPIC], fromBeginning: true });
  await consumer.run({
    autoCommit: false,
    eachMessage: async ({ partition, message }) => onMessage(toReceived(partition, message)),
  });
  return consumer;
}

it('a second group member resumes from the committed offset, not before and not after', async () => {
  const producer = kafka.producer({ allowAutoTopicCreation: false });
  cleanup.push(() => producer.disconnect());
  await producer.connect();
  const values = (from: number, to: number) =>
    Array.from({ length: to - from }, (_, i) => ({ key: 'k', value: `m${from + i}` }));
  await producer.send({ topic: TOPIC, acks: -1, messages: values(0, 10) });

  const groupId = uniqueGroup('resume');
  const first: Received[] = [];
  const c1 = await consume(groupId, (r) => first.push(r));
  await waitFor(() => first.length === 10, 'the first member to read all 10 messages');
  expect(first.map((r) => r.value)).toEqual(values(0, 10).map((m) => m.value));
  // Commit only the first six (offset 6 = the next one to read).
  await c1.commitOffsets([{ topic: TOPIC, partition: 0, offset: '6' }]);
  await c1.disconnect();

  const admin = kafka.admin();
  await admin.connect();
  const committed = await admin.fetchOffsets({ groupId, topics: [TOPIC] });
  await admin.disconnect();
  expect(committed[0]?.partitions).toEqual([expect.objectContaining({ partition: 0, offset: '6' })]);

  const second: Received[] = [];
  const c2 = await consume(groupId, (r) => second.push(r));
  await waitFor(() => second.length >= 4, 'the second member to read the uncommitted messages');
  // 'end' is a marker: once it arrived, anything delivered twice or from before offset 6 would have too.
  await producer.send({ topic: TOPIC, acks: -1, messages: [...values(10, 12), { key: 'k', value: 'end' }] });
  await waitFor(() => second.some((r) => r.value === 'end'), 'the second member to read up to the marker');
  await c2.disconnect();
  await producer.disconnect();

  expect(second.map((r) => r.offset)).toEqual(['6', '7', '8', '9', '10', '11', '12']);
  expect(second.map((r) => r.value)).toEqual(['m6', 'm7', 'm8', 'm9', 'm10', 'm11', 'end']);
});
