// Builds the kafkajs client every Sett service uses, with timeouts chosen for us, the configured
// SASL and TLS, and kafkajs's own log lines routed into the caller's logger.
import { Kafka, logLevel, type LogEntry, type RetryOptions } from 'kafkajs';
import { kafkajsSecurityOptions, type KafkaSecurity } from './security';
import { silentLogger, type KafkaLogger } from './types';
import { registerKafkajsCodecs } from './kafkajs-codecs';

export type KafkaClientOptions = {
  brokers: string[];
  clientId: string;
  logger?: KafkaLogger;
  /** TCP connect timeout. Short, because an unreachable broker should fail over quickly (default 3 s). */
  connectionTimeoutMs?: number;
  /** Per-request timeout (default 30 s). */
  requestTimeoutMs?: number;
  /** Lowest kafkajs level passed on (default 'info'; 'debug' is very chatty). */
  logLevel?: 'nothing' | 'error' | 'warn' | 'info' | 'debug';
  /**
   * Retry policy of connection and metadata requests (default: 5 retries, 100 ms to 2 s apart,
   * about 4 s in all). kafkajs's own default backs off up to 30 s per attempt, which nests
   * under every producer and consumer retry and keeps a client busy for minutes after its
   * broker went away.
   */
  retry?: RetryOptions;
  /** SASL and TLS (config.kafka.security); unset means plaintext. */
  security?: KafkaSecurity;
  /**
   * Called when a consumer's committed offset is no longer on the broker (retention removed the
   * messages before they were consumed) and kafkajs resets it to the earliest offset: those
   * messages are lost. Logged as an error whether or not a hook is given.
   */
  onOffsetReset?: (info: OffsetReset) => void;
};

export type OffsetReset = { groupId: string; topic: string; partition: number };

/** What kafkajs logs (at error level) when it resets an out-of-range offset (consumerGroup.js). */
const OFFSET_RESET_MESSAGE = 'Offset out of range, resetting to default offset';

const LEVELS = {
  nothing: logLevel.NOTHING,
  error: logLevel.ERROR,
  warn: logLevel.WARN,
  info: logLevel.INFO,
  debug: logLevel.DEBUG,
} as const;

export function createKafka(options: KafkaClientOptions): Kafka {
  registerKafkajsCodecs();
  const logger = options.logger ?? silentLogger;
  if (options.security?.tls?.verify === false) {
    logger.warn(
      'kafka TLS certificate verification is off (KAFKA_SSL_VERIFY=false): the connection is not authenticated',
      {
        clientId: options.clientId,
      },
    );
  }
  return new Kafka({
    brokers: options.brokers,
    clientId: options.clientId,
    ...kafkajsSecurityOptions(options.security),
    connectionTimeout: options.connectionTimeoutMs ?? 3000,
    requestTimeout: options.requestTimeoutMs ?? 30000,
    // kafkajs 2.x only enforces requestTimeout when asked; without it a silent broker hangs a send.
    enforceRequestTimeout: true,
    retry: options.retry ?? { retries: 5, initialRetryTime: 100, maxRetryTime: 2000 },
    logLevel: LEVELS[options.logLevel ?? 'info'],
    logCreator: () => (entry: LogEntry) => {
      if (entry.log.message === OFFSET_RESET_MESSAGE)
        return offsetReset(logger, entry, options.onOffsetReset);
      kafkajsLogToLogger(logger, entry);
    },
  });
}

/** Exported for tests: maps one kafkajs log entry onto our logger at the matching level. */
export function kafkajsLogToLogger(logger: KafkaLogger, entry: LogEntry): void {
  const { message, timestamp: _timestamp, ...extra } = entry.log;
  const meta = { ...extra, kafkajs: entry.namespace };
  const text = `kafkajs: ${message}`;
  switch (entry.level) {
    case logLevel.ERROR:
      logger.error(text, meta);
      break;
    case logLevel.WARN:
      logger.warn(text, meta);
      break;
    case logLevel.INFO:
      logger.info(text, meta);
      break;
    default:
      logger.debug(text, meta);
  }
}

/** kafkajs reset a consumer's offset: messages were lost. Our own error line, and the hook. */
function offsetReset(logger: KafkaLogger, entry: LogEntry, hook?: (info: OffsetReset) => void): void {
  const { groupId, topic, partition } = entry.log as unknown as OffsetReset;
  logger.error(
    'kafka consumer offset reset: the committed offset is no longer on the broker (retention dropped messages before they were consumed); the group restarts from the earliest offset and the messages in between are lost',
    { groupId, topic, partition },
  );
  hook?.({ groupId, topic, partition });
}
