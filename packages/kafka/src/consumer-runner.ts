// Runs a kafkajs consumer group member that hands each fetched batch to handleBatch and commits
// its offsets only after handleBatch resolved: the ingestion worker writes to Postgres inside
// handleBatch, so a commit means the work is durable (at-least-once; inserts are idempotent on
// the event uuid). A failed batch is not committed and is fetched again after a backoff.
import type { Admin, Consumer, Kafka, KafkaMessage, RetryOptions } from 'kafkajs';
import { silentLogger, type KafkaLogger } from './types';

export type ConsumerBatch = {
  topic: string;
  partition: number;
  highWatermark: string;
  messages: KafkaMessage[];
};

export type BatchContext = {
  /** Tells the coordinator we are alive; the runner also does this on a timer during a batch. */
  heartbeat(): Promise<void>;
  /** False once stop() was called: long handlers may cut work short (and throw, to not commit). */
  isRunning(): boolean;
  /** True when the partition was re-assigned or seeked and this batch is outdated. */
  isStale(): boolean;
};

export type PartitionLag = {
  topic: string;
  partition: number;
  /** Next offset the group will read, or '-1' when it has committed nothing yet. */
  committedOffset: string;
  highWatermark: string;
  /** Messages not yet committed (from the log start when nothing is committed). */
  lag: number;
};

export type ConsumerRunnerOptions = {
  kafka: Kafka;
  groupId: string;
  topics: string[];
  handleBatch: (batch: ConsumerBatch, ctx: BatchContext) => Promise<void>;
  sessionTimeout?: number;
  heartbeatInterval?: number;
  maxWaitTimeInMs?: number;
  maxBytesPerPartition?: number;
  partitionsConsumedConcurrently?: number;
  /** Where a group with no committed offset starts (default true: the beginning). */
  fromBeginning?: boolean;
  /** Backoff between retries of a failed batch (kafkajs retry options). */
  retry?: RetryOptions;
  logger?: KafkaLogger;
};

export type ConsumerRunner = {
  start(): Promise<void>;
  /** Lets the in-flight batch finish and commit, then leaves the group and disconnects. */
  stop(): Promise<void>;
  lag(): Promise<PartitionLag[]>;
  isRunning(): boolean;
  /** The underlying kafkajs consumer, for instrumentation events. */
  consumer: Consumer;
};

export function createConsumerRunner(options: ConsumerRunnerOptions): ConsumerRunner {
  const logger = options.logger ?? silentLogger;
  const heartbeatInterval = options.heartbeatInterval ?? 3000;
  const { groupId, topics, kafka } = options;

  const consumer = kafka.consumer({
    groupId,
    sessionTimeout: options.sessionTimeout ?? 30000,
    heartbeatInterval,
    maxWaitTimeInMs: options.maxWaitTimeInMs ?? 1000,
    maxBytesPerPartition: options.maxBytesPerPartition,
    allowAutoTopicCreation: false,
    // Exhausted retries crash the consumer, which kafkajs then restarts (rejoining the group)
    // and which resumes from the last committed offset, so a failing batch is retried forever
    // at a bounded pace.
    retry: options.retry ?? { initialRetryTime: 300, maxRetryTime: 10_000, retries: 10 },
  });

  let running = false;
  let admin: Admin | undefined;
  let adminConnecting: Promise<Admin> | undefined;

  consumer.on(consumer.events.CRASH, ({ payload }) => {
    logger.error('kafka consumer crashed', {
      groupId,
      error: payload.error.message,
      restart: payload.restart,
    });
  });

  const start = async (): Promise<void> => {
    await consumer.connect();
    await consumer.subscribe({ topics, fromBeginning: options.fromBeginning ?? true });
    await consumer.run({
      autoCommit: false,
      eachBatchAutoResolve: false,
      partitionsConsumedConcurrently: options.partitionsConsumedConcurrently ?? 1,
      eachBatch: async ({
        batch,
        resolveOffset,
        heartbeat,
        commitOffsetsIfNecessary,
        isRunning,
        isStale,
      }) => {
        if (batch.isEmpty() || !isRunning() || isStale()) return;
        const { topic, partition } = batch;
        const started = Date.now();
        // kafkajs only heartbeats between batches; a long database write must not cost us the
        // partition. heartbeat() itself skips the request until heartbeatInterval has passed.
        const beat = setInterval(() => {
          heartbeat().catch((error: Error) =>
            logger.debug('heartbeat during batch failed', { groupId, error: error.message }),
          );
        }, heartbeatInterval);
        try {
          await options.handleBatch(
            { topic, partition, highWatermark: batch.highWatermark, messages: batch.messages },
            { heartbeat, isRunning, isStale },
          );
        } catch (error) {
          logger.error('batch handler failed; offsets not committed, the batch will be retried', {
            groupId,
            topic,
            partition,
            firstOffset: batch.firstOffset(),
            lastOffset: batch.lastOffset(),
            error: (error as Error).message,
          });
          throw error;
        } finally {
          clearInterval(beat);
        }
        const lastOffset = batch.lastOffset();
        resolveOffset(lastOffset);
        // A committed offset names the next message to read, hence +1.
        const next = (BigInt(lastOffset) + 1n).toString();
        await commitOffsetsIfNecessary({ topics: [{ topic, partitions: [{ partition, offset: next }] }] });
        logger.debug('batch committed', {
          groupId,
          topic,
          partition,
          messages: batch.messages.length,
          committed: next,
          ms: Date.now() - started,
        });
      },
    });
    running = true;
  };

  const getAdmin = (): Promise<Admin> => {
    if (admin) return Promise.resolve(admin);
    adminConnecting ??= (async () => {
      const a = kafka.admin();
      await a.connect();
      admin = a;
      return a;
    })().finally(() => {
      adminConnecting = undefined;
    });
    return adminConnecting;
  };

  // Built on fetchTopicOffsets + fetchOffsets because the dev broker lacks ListGroups and
  // DescribeGroups (ARCHITECTURE.md).
  const lag = async (): Promise<PartitionLag[]> => {
    const a = await getAdmin();
    const committed = await a.fetchOffsets({ groupId, topics });
    const result: PartitionLag[] = [];
    for (const topic of topics) {
      const ends = await a.fetchTopicOffsets(topic);
      const byPartition = new Map(
        (committed.find((c) => c.topic === topic)?.partitions ?? []).map((p) => [p.partition, p.offset]),
      );
      for (const end of ends) {
        const committedOffset = byPartition.get(end.partition) ?? '-1';
        const from = BigInt(committedOffset) >= 0n ? BigInt(committedOffset) : BigInt(end.low);
        const lagValue = BigInt(end.high) - from;
        result.push({
          topic,
          partition: end.partition,
          committedOffset,
          highWatermark: end.high,
          lag: Number(lagValue > 0n ? lagValue : 0n),
        });
      }
    }
    return result.sort((x, y) => x.topic.localeCompare(y.topic) || x.partition - y.partition);
  };

  const stop = async (): Promise<void> => {
    running = false;
    // disconnect() stops the runner first, which waits for the in-flight batch (and its commit).
    await consumer.disconnect();
    const a = admin ?? (adminConnecting ? await adminConnecting.catch(() => undefined) : undefined);
    admin = undefined;
    await a?.disconnect();
  };

  return { start, stop, lag, isRunning: () => running, consumer };
}
