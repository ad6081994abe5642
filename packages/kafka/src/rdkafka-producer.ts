// Sett's producer over node-rdkafka (librdkafka): the client does the batching, encoding,
// compression and the network on its own threads, off the event loop that parses HTTP. A send()
// hands each message to librdkafka (one native call per message, the value copied) and settles
// when the delivery report of its last message arrives: resolved when all were acknowledged
// (acks=all), rejected with the first failure otherwise, or with a timeout after sendTimeoutMs.
// librdkafka's own message.timeout.ms is the same, but librdkafka 2.0.2 does not expire messages
// queued for a broker that is down (seen against the dev broker), so the timer is ours: a down
// broker becomes a rejected send, and capture's 503, within the send timeout. A message whose
// caller was told it failed may still be delivered later (at-least-once; consumers de-duplicate
// on the event uuid).
//
// Ordering: per-key order holds either way. Not idempotent, one produce request is in flight per
// broker connection (as the kafkajs producer's); idempotent (`idempotence` on, or `auto` and the
// broker assigned a producer id to a probe at connect), five are, the broker ordering them by
// sequence number. The partitioner is murmur2, so a key lands on the partition kafkajs and the
// Java client would pick.
import { silentLogger, type KafkaLogger } from './types';
import { createHealthTracker } from './producer-health';
import {
  MAX_MESSAGE_BYTES,
  ProduceError,
  messageBytes,
  oversized,
  type BatchingProducer,
  type ProducerMessage,
  type ProducerTuning,
} from './producer-types';
import {
  loadRdkafka,
  type RdkafkaDeliveryReport,
  type RdkafkaError,
  type RdkafkaProducer,
} from './rdkafka-binding';
import { rdkafkaSecurityConfig, type KafkaSecurity } from './security';

export type RdkafkaProducerOptions = ProducerTuning & {
  brokers: string[];
  clientId: string;
  security?: KafkaSecurity;
  logger?: KafkaLogger;
  /** Produce requests in flight per broker connection (default 1, which keeps per-key order). */
  maxInFlightRequests?: number;
  /** librdkafka statistics every this many ms (tests count produce requests with it; default off). */
  statisticsIntervalMs?: number;
  /** Extra librdkafka settings, applied last (benchmarks). */
  librdkafka?: Record<string, string | number | boolean>;
};

type Call = {
  remaining: number;
  settled: boolean;
  resolve: () => void;
  reject: (error: ProduceError) => void;
  timer: ReturnType<typeof setTimeout> | undefined;
};

/**
 * librdkafka's topic-level producer properties. node-rdkafka hands librdkafka a default topic
 * configuration of its own (its second constructor argument, `{}` when left out), which replaces
 * whatever topic-level property was set among the global ones: so these must travel in that
 * argument. Given globally, `partitioner` was silently the default CRC32 (a key landed on another
 * partition than kafkajs and the Java client choose) and `message.timeout.ms` 300 s.
 */
const TOPIC_PROPERTIES = new Set([
  'acks',
  'request.required.acks',
  'request.timeout.ms',
  'message.timeout.ms',
  'delivery.timeout.ms',
  'queuing.strategy',
  'produce.offset.report',
  'partitioner',
  'compression.level',
]);

/** Splits librdkafka settings into node-rdkafka's two constructor arguments. */
function rdkafkaProducerConfig(all: Record<string, unknown>): {
  global: Record<string, unknown>;
  topic: Record<string, unknown>;
} {
  const global: Record<string, unknown> = {};
  const topic: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(all))
    (TOPIC_PROPERTIES.has(name) ? topic : global)[name] = value;
  return { global, topic };
}

/** How often delivery reports are collected while messages are outstanding. */
const POLL_INTERVAL_MS = 1;
/** How often errors and statistics are collected otherwise. */
const IDLE_POLL_INTERVAL_MS = 100;
/** librdkafka's local error codes we react to (rdkafka.h). */
const ERR_MSG_TIMED_OUT = -192;
const ERR_QUEUE_FULL = -184;
/** Broker-down errors repeat on every reconnect attempt: logged at most this often. */
const LOG_EVERY_MS = 10_000;

export function createRdkafkaProducer(options: RdkafkaProducerOptions): BatchingProducer {
  const loaded = loadRdkafka();
  if ('error' in loaded) throw loaded.error;
  const Kafka = loaded.module;
  const logger = options.logger ?? silentLogger;
  const sendTimeoutMs = options.sendTimeoutMs ?? 10_000;
  const maxMessageBytes = options.maxMessageBytes ?? MAX_MESSAGE_BYTES;
  if (options.security?.tls?.verify === false)
    logger.warn(
      'kafka TLS certificate verification is off (KAFKA_SSL_VERIFY=false): the connection is not authenticated',
      { clientId: options.clientId },
    );

  const mode = options.idempotence ?? 'off';
  const inFlight = (idempotent: boolean) => options.maxInFlightRequests ?? (idempotent ? 5 : 1);
  /** librdkafka's settings, idempotent or not. */
  const settings = (idempotent: boolean) => ({
    'metadata.broker.list': options.brokers.join(','),
    'client.id': options.clientId,
    ...rdkafkaSecurityConfig(options.security),
    // Duplicates a retry may still make are absorbed by the uuid in Postgres.
    'enable.idempotence': idempotent,
    acks: -1,
    'max.in.flight.requests.per.connection': inFlight(idempotent),
    'linger.ms': options.lingerMs ?? 5,
    'batch.num.messages': options.maxBatchMessages ?? 2000,
    'batch.size': options.maxBatchBytes ?? 900_000,
    'message.max.bytes': Math.max(1_000_000, maxMessageBytes + 1024),
    'message.timeout.ms': sendTimeoutMs,
    'compression.codec': options.compression ?? 'none',
    partitioner: 'murmur2_random',
    // Reconnect within a second of a broker coming back (default: up to 10 s).
    'reconnect.backoff.ms': 100,
    'reconnect.backoff.max.ms': 1000,
    'retry.backoff.ms': 100,
    'socket.keepalive.enable': true,
    // Brokers close idle connections; that is no error (it would flap readiness).
    'log.connection.close': false,
    'allow.auto.create.topics': false,
    ...(options.statisticsIntervalMs ? { 'statistics.interval.ms': options.statisticsIntervalMs } : {}),
    dr_cb: true,
    ...options.librdkafka,
  });

  let connected = false;
  let closing = false;
  let pending = 0;
  let poller: ReturnType<typeof setInterval> | undefined;
  let idlePoller: ReturnType<typeof setInterval> | undefined;
  let lastLogAt = 0;
  let requests = 0;
  const counters = { messagesAcked: 0, messagesFailed: 0, sendsTimedOut: 0 };

  const tracker = createHealthTracker(options.readiness ?? {}, (topics) => probe(topics));

  const probe = (topics: string[]): Promise<void> =>
    new Promise((resolve, reject) => {
      producer.getMetadata({ allTopics: true, timeout: 5000 }, (error, metadata) => {
        if (error) return reject(new Error(error.message));
        for (const name of topics) {
          const topic = metadata.topics.find((t) => t.name === name);
          if (!topic) return reject(new Error(`topic ${name} does not exist`));
          const leaderless = topic.partitions.filter((p) => p.leader < 0);
          if (topic.partitions.length === 0 || leaderless.length > 0)
            return reject(new Error(`topic ${name} has ${leaderless.length} partitions without a leader`));
        }
        resolve();
      });
    });

  const startPolling = (): void => {
    poller ??= setInterval(() => producer.poll(), POLL_INTERVAL_MS);
  };
  const stopPolling = (): void => {
    clearInterval(poller);
    poller = undefined;
  };
  /** Sends not yet resolved or rejected (flush waits for them; each has its timer). */
  let openCalls = 0;
  const settle = (call: Call): boolean => {
    if (call.settled) return false;
    call.settled = true;
    openCalls--;
    clearTimeout(call.timer);
    return true;
  };

  const onDeliveryReport = (error: RdkafkaError | null, report: RdkafkaDeliveryReport): void => {
    pending--;
    if (pending === 0) stopPolling();
    const call = report.opaque as Call;
    if (error) {
      counters.messagesFailed++;
      const timedOut = error.code === ERR_MSG_TIMED_OUT;
      if (settle(call)) {
        if (timedOut) counters.sendsTimedOut++;
        const failure = new ProduceError(
          timedOut ? 'timeout' : 'broker',
          timedOut ? `send not acknowledged within ${sendTimeoutMs} ms` : `produce failed: ${error.message}`,
          error,
        );
        tracker.recordFailure(failure.message);
        call.reject(failure);
      }
      return;
    }
    counters.messagesAcked++;
    if (--call.remaining === 0 && settle(call)) {
      tracker.recordSuccess();
      call.resolve();
    }
  };

  // librdkafka reports real trouble only (connections failing, all brokers down, authentication).
  const onError = (error: RdkafkaError): void => {
    tracker.recordFailure(`kafka: ${error.message}`);
    const now = Date.now();
    if (now - lastLogAt < LOG_EVERY_MS) return;
    lastLogAt = now;
    logger.warn('kafka producer error (node-rdkafka)', { error: error.message, code: error.code });
  };

  const onStats = ({ message }: { message: string }): void => {
    const stats = JSON.parse(message) as { brokers?: Record<string, { req?: Record<string, number> }> };
    requests = Object.values(stats.brokers ?? {}).reduce((n, b) => n + (b.req?.Produce ?? 0), 0);
  };

  const build = (withIdempotence: boolean): RdkafkaProducer => {
    const { global, topic } = rdkafkaProducerConfig(settings(withIdempotence));
    const built: RdkafkaProducer = new Kafka.Producer(global, topic);
    built.on('delivery-report', onDeliveryReport);
    built.on('event.error', onError);
    if (options.statisticsIntervalMs) built.on('event.stats', onStats);
    return built;
  };
  // `auto` starts without and is settled at connect, before anything is produced.
  let idempotent = mode === 'on';
  let producer = build(idempotent);

  const send = (topic: string, messages: ProducerMessage[]): Promise<void> => {
    if (!connected || closing)
      return Promise.reject(new ProduceError('not_connected', 'producer is not connected'));
    if (messages.length === 0) return Promise.resolve();
    let sizes: number[] | undefined;
    // Sizes only when something could be over the limit: most calls carry small events.
    for (const m of messages)
      if ((typeof m.value === 'string' ? m.value.length * 3 : m.value.length) + 1024 > maxMessageBytes) {
        sizes = messages.map(messageBytes);
        break;
      }
    const refusal = sizes && oversized(sizes, maxMessageBytes);
    if (refusal) return Promise.reject(refusal);

    return new Promise<void>((resolve, reject) => {
      const call: Call = { remaining: messages.length, settled: false, resolve, reject, timer: undefined };
      openCalls++;
      call.timer = setTimeout(() => {
        if (!settle(call)) return;
        counters.sendsTimedOut++;
        const failure = new ProduceError('timeout', `send not acknowledged within ${sendTimeoutMs} ms`);
        tracker.recordFailure(failure.message);
        reject(failure);
      }, sendTimeoutMs);
      for (let i = 0; i < messages.length; i++) {
        const m = messages[i]!;
        const value = typeof m.value === 'string' ? Buffer.from(m.value) : m.value;
        try {
          producer.produce(topic, null, value, m.key, null, call);
        } catch (error) {
          // Nothing more of this call goes out; what already went still gets its reports.
          const code = (error as RdkafkaError).code;
          settle(call);
          counters.messagesFailed += messages.length - i;
          const failure = new ProduceError(
            'broker',
            code === ERR_QUEUE_FULL
              ? 'produce queue full (the broker is not keeping up or unreachable)'
              : `produce failed: ${(error as Error).message}`,
            error,
          );
          tracker.recordFailure(failure.message);
          reject(failure);
          break;
        }
        pending++;
      }
      if (pending > 0) startPolling();
    });
  };

  const flush = async (): Promise<void> => {
    // Every open send settles within sendTimeoutMs (its timer), so this ends.
    while (openCalls > 0) {
      await new Promise<void>((resolve) => producer.flush(100, () => resolve()));
      producer.poll();
      await new Promise((r) => setImmediate(r));
    }
  };

  return {
    client: 'node-rdkafka',
    async connect() {
      if (mode === 'auto' && !connected && !idempotent) {
        const probe = await probeIdempotence(Kafka, settings(true), Math.min(sendTimeoutMs, 5000));
        if (probe.assigned) {
          idempotent = true;
          producer = build(true);
        }
        logger.info(
          probe.assigned
            ? 'kafka producer is idempotent: 5 produce requests in flight'
            : 'kafka producer is not idempotent (the broker assigned no producer id): 1 produce request in flight',
          { clientId: options.clientId, ...(probe.reason ? { reason: probe.reason } : {}) },
        );
      }
      await new Promise<void>((resolve, reject) =>
        producer.connect({ timeout: Math.max(sendTimeoutMs, 5000) }, (error) =>
          error ? reject(new Error(`kafka producer could not connect: ${error.message}`)) : resolve(),
        ),
      );
      connected = true;
      closing = false;
      idlePoller = setInterval(() => producer.poll(), IDLE_POLL_INTERVAL_MS);
      idlePoller.unref();
    },
    send,
    flush,
    async disconnect() {
      if (!connected) return;
      closing = true;
      await flush();
      stopPolling();
      clearInterval(idlePoller);
      tracker.reset();
      await new Promise<void>((resolve) => producer.disconnect(5000, () => resolve()));
      connected = false;
    },
    isConnected: () => connected && !closing,
    health: () => tracker.snapshot(connected && !closing),
    checkReady: () => tracker.checkReady(connected && !closing),
    stats: () => ({
      ...counters,
      pendingMessages: pending,
      requests,
      largestBatch: 0,
      idempotent,
      maxInFlight: inFlight(idempotent),
    }),
  };
}

/** How often a probe reports its statistics (and is polled for them). */
const PROBE_STATS_INTERVAL_MS = 100;

/**
 * Whether the broker gives an idempotent producer what it needs: a short-lived producer with
 * `enable.idempotence` connects and reports, in its statistics, a producer id assigned (yes), or
 * a fatal error, or nothing within `timeoutMs` (no). Nothing is produced.
 */
export async function probeIdempotence(
  Kafka: Extract<ReturnType<typeof loadRdkafka>, { module: unknown }>['module'],
  config: Record<string, unknown>,
  timeoutMs: number,
): Promise<{ assigned: boolean; reason?: string }> {
  const { global, topic } = rdkafkaProducerConfig(config);
  const probe: RdkafkaProducer = new Kafka.Producer(
    { ...global, 'statistics.interval.ms': PROBE_STATS_INTERVAL_MS, dr_cb: false },
    topic,
  );
  let timer: ReturnType<typeof setTimeout> | undefined;
  let poller: ReturnType<typeof setInterval> | undefined;
  try {
    return await new Promise((resolve) => {
      timer = setTimeout(
        () => resolve({ assigned: false, reason: `no producer id within ${timeoutMs} ms` }),
        timeoutMs,
      );
      probe.on('event.stats', ({ message }) => {
        const state = (JSON.parse(message) as { eos?: { idemp_state?: string } }).eos?.idemp_state;
        if (state === 'Assigned') resolve({ assigned: true });
      });
      probe.on('event.error', (error: RdkafkaError) => {
        if (error.isFatal) resolve({ assigned: false, reason: error.message });
      });
      probe.connect({ timeout: timeoutMs }, (error) => {
        if (error) resolve({ assigned: false, reason: error.message });
        else poller = setInterval(() => probe.poll(), PROBE_STATS_INTERVAL_MS);
      });
    });
  } finally {
    clearTimeout(timer);
    clearInterval(poller);
    // A client that never connected may not call back: the wait is bounded either way.
    let bound: ReturnType<typeof setTimeout> | undefined;
    await Promise.race([
      new Promise<void>((resolve) => probe.disconnect(2000, () => resolve())),
      new Promise<void>((resolve) => (bound = setTimeout(resolve, 3000))),
    ]);
    clearTimeout(bound);
  }
}
