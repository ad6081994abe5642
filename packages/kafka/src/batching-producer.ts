// A Kafka producer that batches across callers, like librdkafka's linger.ms / batch.size:
// messages from concurrent send() calls accumulate for up to lingerMs or until a size cap and
// go out in one sendBatch request. Each caller's promise settles with the request(s) that
// carried its own messages. Fewer, larger requests are what high-volume producers do anyway,
// and on the development broker (one record batch per partition per fetch) they are what keeps
// consumers fast. While a request is in flight the next batch keeps filling (one request in
// flight by default); when the request is answered, a batch whose linger has expired, or any
// waiting batch, goes out at once. Under load batches grow with the round trip instead of
// queueing up as many small linger-sized ones.
//
// Health: every produce request's outcome is recorded (last success, last failure, failures in a
// row), and checkReady() turns that into a readiness answer: failing while recent requests
// failed, ready while recent ones succeeded, and when idle a cheap metadata probe, bounded in
// time, so readiness follows the broker without traffic.
import {
  CompressionTypes,
  type Admin,
  type IHeaders,
  type Kafka,
  type Message,
  type Producer,
} from 'kafkajs';
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
  /** How checkReady() decides (defaults in ReadinessPolicy). */
  readiness?: ReadinessPolicy;
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

/** What the last produce requests (and readiness probes) said about the broker. Times are ms since epoch. */
export type ProducerHealth = {
  connected: boolean;
  lastSuccessAt: number | null;
  lastFailureAt: number | null;
  /** Failed produce requests, timed-out sends and failed probes since the last success. */
  consecutiveFailures: number;
  lastError: string | null;
};

export type ReadinessPolicy = {
  /** A produce request acknowledged this recently, with none failing since, means ready (default 2 s). */
  freshMs?: number;
  /** After a failure, answer not ready for this long before probing again (default 2 s). */
  failureHoldMs?: number;
  /** The longest a readiness check waits for its probe (default 1.5 s). */
  probeTimeoutMs?: number;
  /** A probe's answer is reused for this long, so frequent checks cost one request (default 1 s). */
  probeCacheMs?: number;
  /** Topics whose metadata the probe fetches; each partition must have a leader (default none). */
  probeTopics?: string[];
  now?: () => number;
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
  health(): ProducerHealth;
  /**
   * Resolves when the producer can be expected to produce, rejects with the reason otherwise;
   * never waits longer than the policy's probeTimeoutMs (see ReadinessPolicy).
   */
  checkReady(): Promise<void>;
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
/** A readiness probe still running after this long is replaced by a fresh one. */
const ABANDON_PROBE_AFTER_MS = 10_000;

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

  const policy = options.readiness ?? {};
  const now = policy.now ?? Date.now;
  const freshMs = policy.freshMs ?? 2000;
  const failureHoldMs = policy.failureHoldMs ?? 2000;
  const probeTimeoutMs = policy.probeTimeoutMs ?? 1500;
  const probeCacheMs = policy.probeCacheMs ?? 1000;
  const probeTopics = policy.probeTopics ?? [];
  const health = {
    lastSuccessAt: null as number | null,
    lastFailureAt: null as number | null,
    consecutiveFailures: 0,
    lastError: null as string | null,
  };
  const recordSuccess = (): void => {
    health.lastSuccessAt = now();
    health.consecutiveFailures = 0;
  };
  const recordFailure = (message: string): void => {
    health.lastFailureAt = now();
    health.consecutiveFailures++;
    health.lastError = message;
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

  // The probe: one metadata request on an admin client of our own (created on first use). One
  // at a time; concurrent checks share it and its answer is reused for probeCacheMs. A probe
  // stuck in kafkajs's own retries longer than ABANDON_PROBE_AFTER_MS is forgotten, its late
  // answer ignored, so a hung connection cannot pin readiness.
  let admin: Admin | undefined;
  let probing: { promise: Promise<void>; startedAt: number } | undefined;
  let lastProbe: { at: number; error: string | null } | undefined;

  const runProbe = async (): Promise<void> => {
    admin ??= options.kafka.admin();
    await admin.connect();
    const { topics } = await admin.fetchTopicMetadata({ topics: probeTopics });
    for (const topic of topics) {
      const leaderless = topic.partitions.filter((p) => p.leader < 0 || p.partitionErrorCode !== 0);
      if (topic.partitions.length === 0 || leaderless.length > 0)
        throw new Error(`topic ${topic.name} has ${leaderless.length} partitions without a leader`);
    }
  };

  const startProbe = (): Promise<void> => {
    const startedAt = now();
    const promise = runProbe().then(
      () => {
        if (probing?.promise !== promise) return;
        lastProbe = { at: now(), error: null };
        recordSuccess();
      },
      (error: unknown) => {
        const message = `probe failed: ${(error as Error).message}`;
        if (probing?.promise === promise) {
          lastProbe = { at: now(), error: message };
          recordFailure(message);
        }
        throw new Error(message);
      },
    );
    void promise
      .catch(() => undefined)
      .finally(() => {
        if (probing?.promise === promise) probing = undefined;
      });
    probing = { promise, startedAt };
    return promise;
  };

  const checkReady = async (): Promise<void> => {
    if (!connected || closing) throw new Error('producer is not connected');
    const t = now();
    if (
      health.consecutiveFailures > 0 &&
      health.lastFailureAt !== null &&
      t - health.lastFailureAt < failureHoldMs
    )
      throw new Error(
        `kafka: ${health.consecutiveFailures} failed produce request(s), send(s) or probe(s) in a row, last: ${health.lastError}`,
      );
    if (
      health.consecutiveFailures === 0 &&
      health.lastSuccessAt !== null &&
      t - health.lastSuccessAt < freshMs
    )
      return;
    if (lastProbe && t - lastProbe.at < probeCacheMs) {
      if (lastProbe.error) throw new Error(lastProbe.error);
      return;
    }
    if (probing && t - probing.startedAt > ABANDON_PROBE_AFTER_MS) probing = undefined;
    const promise = probing?.promise ?? startProbe();
    let timer: ReturnType<typeof setTimeout> | undefined;
    try {
      await Promise.race([
        promise,
        new Promise<never>((_, reject) => {
          timer = setTimeout(
            () => reject(new Error(`probe not answered within ${probeTimeoutMs} ms`)),
            probeTimeoutMs,
          );
        }),
      ]);
    } finally {
      clearTimeout(timer);
    }
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
      probing = undefined;
      await admin?.disconnect().catch(() => undefined);
      connected = false;
    },
    isConnected: () => connected && !closing,
    health: () => ({ connected: connected && !closing, ...health }),
    checkReady,
    stats: () => ({
      ...counters,
      pendingMessages: current.messages + queue.reduce((n, b) => n + b.messages, 0),
      queuedBatches: queue.length,
      inFlight,
    }),
  };
}
