// Shared bits of the @sett/kafka integration tests: fast consumer settings for the dev broker
// and a collector that reads a topic until it has seen everything, shown by a marker message.
import type { Consumer, Kafka, KafkaMessage } from 'kafkajs';
import { waitFor as pollUntil } from '@sett/testing';

export const FAST_GROUP = { sessionTimeout: 3000, heartbeatInterval: 300, maxWaitTimeInMs: 200 } as const;

let groupCounter = 0;
export const uniqueGroup = (name: string): string => `${name}-${process.pid}-${Date.now()}-${++groupCounter}`;

export type Received = { partition: number; offset: string; key: string | null; value: string };

export const toReceived = (partition: number, m: KafkaMessage): Received => ({
  partition,
  offset: m.offset,
  key: m.key?.toString() ?? null,
  value: m.value?.toString() ?? '',
});

/** Polls until check() holds or the deadline passes (then fails with the description). */
export async function waitFor(
  check: () => boolean | Promise<boolean>,
  what: string,
  timeoutMs = 20000,
): Promise<void> {
  await pollUntil(what, check, { timeoutMs });
}

const MARKER = '__end_of_test_messages__';

/**
 * Reads `topic` from the beginning in a fresh group until `count` messages arrived. Then, to
 * show that nothing more (no duplicate) is there, it writes a marker to every partition and
 * reads on until each marker came back: a partition is read in order, so whatever was in it
 * before the marker has been seen. The markers are not returned.
 */
export async function readAll(kafka: Kafka, topic: string, count: number): Promise<Received[]> {
  const received: Received[] = [];
  const markersSeen = new Set<number>();
  const consumer: Consumer = kafka.consumer({ groupId: uniqueGroup('reader'), ...FAST_GROUP });
  await consumer.connect();
  try {
    await consumer.subscribe({ topics: [topic], fromBeginning: true });
    await consumer.run({
      eachBatch: async ({ batch }) => {
        for (const m of batch.messages) {
          if (m.value?.toString() === MARKER) markersSeen.add(batch.partition);
          else received.push(toReceived(batch.partition, m));
        }
      },
    });
    await waitFor(() => received.length >= count, `${count} messages on ${topic} (got ${received.length})`);
    const partitions = await writeMarkers(kafka, topic);
    await waitFor(
      () => partitions.every((p) => markersSeen.has(p)),
      `the end markers of ${topic} (partitions ${partitions.join(', ')})`,
    );
  } finally {
    await consumer.disconnect();
  }
  return received;
}

async function writeMarkers(kafka: Kafka, topic: string): Promise<number[]> {
  const admin = kafka.admin();
  await admin.connect();
  const partitions = (await admin.fetchTopicOffsets(topic)).map((o) => o.partition);
  await admin.disconnect();
  const producer = kafka.producer({ allowAutoTopicCreation: false });
  await producer.connect();
  await producer.send({
    topic,
    acks: -1,
    messages: partitions.map((partition) => ({ partition, value: MARKER })),
  });
  await producer.disconnect();
  return partitions;
}
