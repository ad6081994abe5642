// Shared bits of the @sett/kafka integration tests: fast consumer settings for the dev broker
// and a collector that reads a topic until it has seen enough.
import type { Consumer, Kafka, KafkaMessage } from 'kafkajs';

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
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/**
 * Reads `topic` from the beginning in a fresh group until `count` messages arrived, then waits
 * `settleMs` more so that extra (duplicate) deliveries would be seen too.
 */
export async function readAll(
  kafka: Kafka,
  topic: string,
  count: number,
  settleMs = 500,
): Promise<Received[]> {
  const received: Received[] = [];
  const consumer: Consumer = kafka.consumer({ groupId: uniqueGroup('reader'), ...FAST_GROUP });
  await consumer.connect();
  try {
    await consumer.subscribe({ topics: [topic], fromBeginning: true });
    await consumer.run({
      eachBatch: async ({ batch }) => {
        for (const m of batch.messages) received.push(toReceived(batch.partition, m));
      },
    });
    await waitFor(() => received.length >= count, `${count} messages on ${topic} (got ${received.length})`);
    await new Promise((r) => setTimeout(r, settleMs));
  } finally {
    await consumer.disconnect();
  }
  return received;
}
