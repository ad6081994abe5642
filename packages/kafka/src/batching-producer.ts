// A Kafka producer that batches across callers, like librdkafka's linger.ms / batch.size:
// messages from concurrent send() calls accumulate for up to lingerMs or until a size cap and
// go out in one sendBatch request. Each caller's promise settles with the request(s) that
// carried its own messages. Fewer, larger requests are what high-volume producers do anyway,
// and on the development broker (one record batch per partition per fetch) they are what keeps
// consumers fast. While a request is in flight the next batch keeps filling (one request in
// flight by default); when the request is answered, a batch whose linger has expired, or any
// waiting batch, goes out at once. Under load batches grow with the round trip instead of
// queueing up as many small linger-sized ones.
import { CompressionTypes, type IHeaders, type Kafka, type Message, type Producer } from 'kafkajs';
import { silentLogger, type KafkaLogger } from './types';
import { SettPartitioner } from './partitioner';

/** Largest single message we accept; Kafka's default message.max.bytes is 1 MB (1048588). */
export const MAX_MESSAGE_BYTES = 1_000_000;

export type ProducerMessage = { key: string | null; value: string | Buffer; headers?: IHeaders };

export type ProduceErrorCode = 'timeout' | 'broker' | 'not_connected' | 'too_large';

/** Why a send() was not acknowledged. Messages of a 'timeout' or 'broker' failure may still have
 * reached Kafka (at-least-once): consumers de-duplicate on the event uuid. */
export class ProduceError extends Error {
  override readonly name = 'ProduceError';
  constructor(
    readonly code: ProduceErrorCode,
    message: string,
    override readonly cause?: unknown,
  ) {
    super(message);
  }
}

export type BatchingProducerOptions = {
  kafka: Kafka;
  /** How long the first message of a batch waits for company when no request is in flight; a
   * batch that filled while a request was in flight goes out as soon as it is answered (default 5 ms). */
  lingerMs?: number;
  /** Messages per produce request (default 2000). */
  maxBatchMessages?: number;
  /** Approximate bytes per produce request, kept under the broker's 1 MB default (default 900 KB). */
  maxBatchBytes?: number;
  /** A send() not acknowledged within this time rejects (default 10 s). */
  sendTimeoutMs?: number;
  /** Messages larger than this are refused up front (default MAX_MESSAGE_BYTES). */
  maxMessageBytes?: number;
  /**
   * Produce requests in flight at once (default 1). With one, a later request never overtakes
   * an earlier one, so per-key order holds even across retries, and load makes batches bigger
   * instead of more numerous.
   */
  maxInFlightRequests?: number;
  logger?: KafkaLogger;
};

export type BatchingProducerStats = {
  /** sendBatch calls made (one produce round trip each, per broker). */
  requests: number;
  requestsFailed: number;
  messagesAcked: number;
  messagesFailed: number;
  sendsTimedOut: number;
  largestBatch: number;
  pendingMessages: number;
  queuedBatches: number;
  inFlight: number;
};

export type BatchingProducer = {
  connect(): Promise<void>;
  send(topic: string, messages: ProducerMessage[]): Promise<void>;
  /** Sends whatever is waiting now and resolves when every batch so far has settled. */
  flush(): Promise<void>;
  /** Stops accepting sends, flushes, then disconnects. */
  disconnect(): Promise<void>;
  isConnected(): boolean;
  stats(): BatchingProducerStats;
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

const RECORD_OVERHEAD_BYTES = 32;

const emptyBatch = (): Batch => ({ byTopic: new Map(), messages: 0, bytes: 0, calls: new Set() });

/** Buffer.byteLength, without scanning a Buffer (a Buffer's length is its byte length). */
const byteLength = (v: string | Buffer): number => (typeof v === 'string' ? Buffer.byteLength(v) : v.length);

function messageBytes(m: ProducerMessage): number {
  let bytes = RECORD_OVERHEAD_BYTES + byteLength(m.value) + (m.key === null ? 0 : byteLength(m.key));
  if (m.headers === undefined) return bytes;
  for (const [k, v] of Object.entries(m.headers)) {
    bytes += Buffer.byteLength(k);
    for (const part of Array.isArray(v) ? v : [v]) if (part !== undefined) bytes += Buffer.byteLength(part);
  }
  return bytes;
}

export function createBatchingProducer(options: BatchingProducerOptions): BatchingProducer {
  const lingerMs = options.lingerMs ?? 5;
  const maxBatchMessages = options.maxBatchMessages ?? 2000;
  const maxBatchBytes = options.maxBatchBytes ?? 900_000;
  const sendTimeoutMs = options.sendTimeoutMs ?? 10_000;
  const maxMessageBytes = options.maxMessageBytes ?? MAX_MESSAGE_BYTES;
  const maxInFlight = options.maxInFlightRequests ?? 1;
  const logger = options.logger ?? silentLogger;

  const producer = options.kafka.producer({
    // Idempotent and transactional producers fail against the dev broker (ARCHITECTURE.md);
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
        compression: CompressionTypes.None,
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
    const tooLarge = sizes.findIndex((s) => s > maxMessageBytes);
    if (tooLarge >= 0) {
      return Promise.reject(
        new ProduceError(
          'too_large',
          `message ${tooLarge} is ${sizes[tooLarge]} bytes, over the ${maxMessageBytes} byte limit`,
        ),
      );
    }

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
        fail(call, new ProduceError('timeout', `send not acknowledged within ${sendTimeoutMs} ms`));
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
        list.push({ key: m.key, value: m.value, headers: m.headers });
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
      connected = false;
    },
    isConnected: () => connected && !closing,
    stats: () => ({
      ...counters,
      pendingMessages: current.messages + queue.reduce((n, b) => n + b.messages, 0),
      queuedBatches: queue.length,
      inFlight,
    }),
  };
}
