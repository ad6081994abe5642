// Sett's producer over kafkajs, batching across callers like librdkafka's linger.ms /
// batch.size: messages from concurrent send() calls accumulate for up to lingerMs or until a size
// cap and go out in one sendBatch request. Each caller's promise settles with the request(s) that
// carried its own messages. Fewer, larger requests are what high-volume producers do anyway, and
// on the development broker (one record batch per partition per fetch) they are what keeps
// consumers fast. While a request is in flight the next batch keeps filling (one request in
// flight by default); when the request is answered, a batch whose linger has expired, or any
// waiting batch, goes out at once. Under load batches grow with the round trip instead of
// queueing up as many small linger-sized ones. The fallback when node-rdkafka is not built
// (producer.ts); kafkajs compresses with gzip only, so lz4, snappy and zstd go uncompressed.
import { CompressionTypes, type Admin, type Kafka, type Message, type Producer } from 'kafkajs';
import { silentLogger, type KafkaLogger } from './types';
import { SettPartitioner } from './partitioner';
import { createHealthTracker } from './producer-health';
import {
  MAX_MESSAGE_BYTES,
  ProduceError,
  messageBytes,
  oversized,
  type BatchingProducer,
  type ProducerMessage,
  type ProducerStats,
  type ProducerTuning,
} from './producer-types';

export type KafkajsProducerOptions = ProducerTuning & {
  kafka: Kafka;
  /**
   * Produce requests in flight at once (default 1). With one, a later request never overtakes
   * an earlier one, so per-key order holds even across retries, and load makes batches bigger
   * instead of more numerous.
   */
  maxInFlightRequests?: number;
  logger?: KafkaLogger;
};

export type KafkajsProducerStats = ProducerStats & {
  queuedBatches: number;
  inFlight: number;
  requestsFailed: number;
};

export type KafkajsProducer = Omit<BatchingProducer, 'stats'> & {
  stats(): KafkajsProducerStats;
  /** The underlying kafkajs producer, for instrumentation events (producer.events.REQUEST). */
  producer: Producer;
};

type Call = {
  parts: number;
  settled: boolean;
  resolve: () => void;
  reject: (error: ProduceError) => void;
  timer: ReturnType<typeof setTimeout>;
};

type Batch = {
  byTopic: Map<string, Message[]>;
  messages: number;
  bytes: number;
  calls: Set<Call>;
};

const emptyBatch = (): Batch => ({ byTopic: new Map(), messages: 0, bytes: 0, calls: new Set() });

export function createKafkajsProducer(options: KafkajsProducerOptions): KafkajsProducer {
  const lingerMs = options.lingerMs ?? 5;
  const maxBatchMessages = options.maxBatchMessages ?? 2000;
  const maxBatchBytes = options.maxBatchBytes ?? 900_000;
  const sendTimeoutMs = options.sendTimeoutMs ?? 10_000;
  const maxMessageBytes = options.maxMessageBytes ?? MAX_MESSAGE_BYTES;
  const maxInFlight = options.maxInFlightRequests ?? 1;
  const logger = options.logger ?? silentLogger;
  const compression = options.compression === 'gzip' ? CompressionTypes.GZIP : CompressionTypes.None;

  const producer = options.kafka.producer({
    // Idempotent and transactional producers fail against the dev broker (docs/architecture.md);
    // duplicates are absorbed by the uuid in Postgres instead.
    idempotent: false,
    allowAutoTopicCreation: false,
    // Same placement as kafkajs's DefaultPartitioner (Java murmur2), without its per-message
    // Long arithmetic and allocations.
    createPartitioner: SettPartitioner,
    // Bounded, so a down broker surfaces as a failed request rather than retrying for minutes;
    // each attempt also runs the client's connection retries (see createKafka), so the caller's
    // sendTimeoutMs timer is what bounds a send.
    retry: { retries: 2, initialRetryTime: 100, maxRetryTime: 1000 },
  });

  let connected = false;
  let closing = false;
  let current = emptyBatch();
  let lingerTimer: ReturnType<typeof setTimeout> | undefined;
  /** The current batch waited its linger (or needs no more): it goes as soon as a slot is free. */
  let currentDue = false;
  const queue: Batch[] = [];
  const unsettled = new Set<Promise<void>>();
  let inFlight = 0;
  const counters = {
    requests: 0,
    requestsFailed: 0,
    messagesAcked: 0,
    messagesFailed: 0,
    sendsTimedOut: 0,
    largestBatch: 0,
  };

  const tracker = createHealthTracker(options.readiness ?? {}, async (topics) => {
    admin ??= options.kafka.admin();
    await admin.connect();
    const { topics: metadata } = await admin.fetchTopicMetadata({ topics });
    for (const topic of metadata) {
      const leaderless = topic.partitions.filter((p) => p.leader < 0 || p.partitionErrorCode !== 0);
      if (topic.partitions.length === 0 || leaderless.length > 0)
        throw new Error(`topic ${topic.name} has ${leaderless.length} partitions without a leader`);
    }
  });
  const recordSuccess = tracker.recordSuccess;
  const recordFailure = tracker.recordFailure;
  let admin: Admin | undefined;

  const fail = (call: Call, error: ProduceError): void => {
    if (call.settled) return;
    call.settled = true;
    clearTimeout(call.timer);
    call.reject(error);
  };

  const seal = (): void => {
    if (lingerTimer) clearTimeout(lingerTimer);
    lingerTimer = undefined;
    currentDue = false;
    if (current.messages === 0) return;
    queue.push(current);
    current = emptyBatch();
    pump();
  };

  /** Linger over: send now if a slot is free, else keep filling until one is (see dispatch). */
  const onLinger = (): void => {
    lingerTimer = undefined;
    if (inFlight < maxInFlight && queue.length === 0) seal();
    else currentDue = true;
  };

  const pump = (): void => {
    while (inFlight < maxInFlight && queue.length > 0) {
      const batch = queue.shift() as Batch;
      const done = dispatch(batch);
      unsettled.add(done);
      void done.finally(() => unsettled.delete(done));
    }
    if (inFlight < maxInFlight && queue.length === 0 && currentDue && current.messages > 0) seal();
  };

  const dispatch = async (batch: Batch): Promise<void> => {
    // Everyone waiting on this batch already gave up (timed out): sending it would only deliver
    // messages their callers were told had failed.
    if ([...batch.calls].every((c) => c.settled)) {
      counters.messagesFailed += batch.messages;
      return;
    }
    inFlight++;
    counters.requests++;
    counters.largestBatch = Math.max(counters.largestBatch, batch.messages);
    let timer: ReturnType<typeof setTimeout> | undefined;
    try {
      const request = producer.sendBatch({
        acks: -1,
        compression,
        timeout: sendTimeoutMs,
        topicMessages: [...batch.byTopic].map(([topic, messages]) => ({ topic, messages })),
      });
      // A hung request must not hold the in-flight slot forever; its late answer is ignored.
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(
          () =>
            reject(
              new ProduceError('timeout', `produce request not acknowledged within ${sendTimeoutMs} ms`),
            ),
          sendTimeoutMs,
        );
      });
      request.catch(() => undefined);
      await Promise.race([request, timeout]);
      recordSuccess();
      counters.messagesAcked += batch.messages;
      for (const call of batch.calls) {
        if (call.settled) continue;
        call.parts--;
        if (call.parts === 0) {
          call.settled = true;
          clearTimeout(call.timer);
          call.resolve();
        }
      }
    } catch (error) {
      counters.requestsFailed++;
      counters.messagesFailed += batch.messages;
      const produceError =
        error instanceof ProduceError
          ? error
          : new ProduceError('broker', `produce request failed: ${(error as Error).message}`, error);
      recordFailure(produceError.message);
      logger.warn('kafka produce request failed', { messages: batch.messages, error: produceError.message });
      for (const call of batch.calls) fail(call, produceError);
    } finally {
      if (timer) clearTimeout(timer);
      inFlight--;
      // What arrived during the round trip has had its wait: send it now rather than after a
      // fresh linger, so a busy producer sends back to back with batches as large as the load.
      if (inFlight === 0 && current.messages > 0) currentDue = true;
      pump();
    }
  };

  const send = (topic: string, messages: ProducerMessage[]): Promise<void> => {
    if (!connected || closing)
      return Promise.reject(new ProduceError('not_connected', 'producer is not connected'));
    if (messages.length === 0) return Promise.resolve();
    const sizes = messages.map(messageBytes);
    const refusal = oversized(sizes, maxMessageBytes);
    if (refusal) return Promise.reject(refusal);

    return new Promise<void>((resolve, reject) => {
      const call: Call = {
        parts: 0,
        settled: false,
        resolve,
        reject,
        timer: undefined as unknown as ReturnType<typeof setTimeout>,
      };
      call.timer = setTimeout(() => {
        counters.sendsTimedOut++;
        const error = new ProduceError('timeout', `send not acknowledged within ${sendTimeoutMs} ms`);
        recordFailure(error.message);
        fail(call, error);
      }, sendTimeoutMs);

      messages.forEach((m, i) => {
        const bytes = sizes[i] as number;
        if (
          current.messages > 0 &&
          (current.messages + 1 > maxBatchMessages || current.bytes + bytes > maxBatchBytes)
        )
          seal();
        let list = current.byTopic.get(topic);
        if (!list) current.byTopic.set(topic, (list = []));
        list.push({ key: m.key, value: m.value });
        current.messages++;
        current.bytes += bytes;
        if (!current.calls.has(call)) {
          current.calls.add(call);
          call.parts++;
        }
      });

      if (current.messages >= maxBatchMessages || current.bytes >= maxBatchBytes) seal();
      else if (!lingerTimer && !currentDue && current.messages > 0)
        lingerTimer = setTimeout(onLinger, lingerMs);
    });
  };

  const flush = async (): Promise<void> => {
    seal();
    // Batches queued behind the in-flight limit are not in `unsettled` yet: loop until drained.
    while (unsettled.size > 0 || queue.length > 0) await Promise.allSettled([...unsettled]);
  };

  return {
    client: 'kafkajs',
    producer,
    async connect() {
      await producer.connect();
      connected = true;
      closing = false;
    },
    send,
    flush,
    async disconnect() {
      closing = true;
      await flush();
      await producer.disconnect();
      tracker.reset();
      await admin?.disconnect().catch(() => undefined);
      connected = false;
    },
    isConnected: () => connected && !closing,
    health: () => tracker.snapshot(connected && !closing),
    checkReady: () => tracker.checkReady(connected && !closing),
    stats: () => ({
      ...counters,
      pendingMessages: current.messages + queue.reduce((n, b) => n + b.messages, 0),
      queuedBatches: queue.length,
      inFlight,
      idempotent: false,
      maxInFlight,
    }),
  };
}
