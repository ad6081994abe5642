// The producer interface Sett's services use, whichever Kafka client is underneath
// (node-rdkafka or kafkajs, see producer.ts): send() resolves only once the broker acknowledged
// every message of the call (acks=all) and rejects with a ProduceError otherwise.

/** Largest single message we accept; Kafka's default message.max.bytes is 1 MB (1048588). */
export const MAX_MESSAGE_BYTES = 1_000_000;

export type ProducerMessage = { key: string | null; value: string | Buffer };

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

/** The Kafka clients Sett can produce with. */
export const KAFKA_CLIENTS = ['node-rdkafka', 'kafkajs'] as const;
export type KafkaClientName = (typeof KAFKA_CLIENTS)[number];

/** Compression of produced record batches. kafkajs does gzip only (the others go uncompressed). */
export const KAFKA_COMPRESSIONS = ['none', 'gzip', 'lz4', 'zstd'] as const;
export type KafkaCompression = (typeof KAFKA_COMPRESSIONS)[number];

export type ProducerStats = {
  messagesAcked: number;
  messagesFailed: number;
  sendsTimedOut: number;
  /** Messages handed to the producer and not yet acknowledged or failed. */
  pendingMessages: number;
  /** Produce requests sent (kafkajs: counted; node-rdkafka: from its statistics, when enabled). */
  requests: number;
  /** Most messages in one produce request (kafkajs only; 0 otherwise). */
  largestBatch: number;
  /** Whether the producer is idempotent (and so keeps per-key order with 5 requests in flight). */
  idempotent: boolean;
  /** Produce requests in flight per broker connection. */
  maxInFlight: number;
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
  /** Which client produces. */
  readonly client: KafkaClientName;
  connect(): Promise<void>;
  send(topic: string, messages: ProducerMessage[]): Promise<void>;
  /** Sends whatever is waiting now and resolves when every message so far has settled. */
  flush(): Promise<void>;
  /** Stops accepting sends, flushes, then disconnects. */
  disconnect(): Promise<void>;
  isConnected(): boolean;
  stats(): ProducerStats;
  health(): ProducerHealth;
  /**
   * Resolves when the producer can be expected to produce, rejects with the reason otherwise;
   * never waits longer than the policy's probeTimeoutMs (see ReadinessPolicy).
   */
  checkReady(): Promise<void>;
};

export type IdempotenceMode = 'auto' | 'on' | 'off';

/** Settings both clients take (the connection itself differs, see each factory). */
export type ProducerTuning = {
  /** How long the first message of a batch waits for company (default 5 ms). */
  lingerMs?: number;
  /** Messages per produce request (default 2000). */
  maxBatchMessages?: number;
  /** Approximate bytes per produce request, kept under the broker's 1 MB default (default 900 KB). */
  maxBatchBytes?: number;
  /** A send() not acknowledged within this time rejects (default 10 s). */
  sendTimeoutMs?: number;
  /** Messages larger than this are refused up front (default MAX_MESSAGE_BYTES). */
  maxMessageBytes?: number;
  /** Record batch compression (default none). */
  compression?: KafkaCompression;
  /**
   * The idempotent producer, which keeps per-key order with 5 produce requests in flight instead
   * of 1 (node-rdkafka only): `on`, `off` (default), or `auto`, on when the broker assigns a
   * producer id at connect (docs/kafka.md, "In flight").
   */
  idempotence?: IdempotenceMode;
  /** How checkReady() decides (defaults in ReadinessPolicy). */
  readiness?: ReadinessPolicy;
};

const RECORD_OVERHEAD_BYTES = 32;

/** Buffer.byteLength, without scanning a Buffer (a Buffer's length is its byte length). */
export const byteLength = (v: string | Buffer): number =>
  typeof v === 'string' ? Buffer.byteLength(v) : v.length;

/** A message's approximate size in a record batch: value, key and record overhead. */
export function messageBytes(m: ProducerMessage): number {
  return RECORD_OVERHEAD_BYTES + byteLength(m.value) + (m.key === null ? 0 : byteLength(m.key));
}

/** The too_large refusal of a send whose message `index` is over the limit, or null. */
export function oversized(sizes: number[], maxMessageBytes: number): ProduceError | null {
  const index = sizes.findIndex((s) => s > maxMessageBytes);
  if (index < 0) return null;
  return new ProduceError(
    'too_large',
    `message ${index} is ${sizes[index]} bytes, over the ${maxMessageBytes} byte limit`,
  );
}
