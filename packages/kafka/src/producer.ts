// The one way Sett's services build a producer: node-rdkafka when it is built and can do what the
// settings ask, else kafkajs, loudly (one error line saying why, and the client's name for
// `sett_kafka_client_info`). `KAFKA_CLIENT` forces either; a forced node-rdkafka that cannot be
// loaded stops the service rather than quietly running the slower client.
import { createKafka } from './client';
import { createKafkajsProducer } from './kafkajs-producer';
import { createRdkafkaProducer } from './rdkafka-producer';
import { loadRdkafka } from './rdkafka-binding';
import { rdkafkaSecurityConfig, UnsupportedByClientError, type KafkaSecurity } from './security';
import { silentLogger, type KafkaLogger } from './types';
import type { BatchingProducer, KafkaClientName, ProducerTuning } from './producer-types';

export type KafkaClientChoice = 'auto' | KafkaClientName;

export type ProducerOptions = ProducerTuning & {
  brokers: string[];
  clientId: string;
  security?: KafkaSecurity;
  logger?: KafkaLogger;
  /** Default 'auto': node-rdkafka when usable, else kafkajs. */
  client?: KafkaClientChoice;
};

/** Which client `choice` comes to here, and why when it is not the preferred one. */
export function resolveKafkaClient(
  choice: KafkaClientChoice,
  security?: KafkaSecurity,
): { client: KafkaClientName; fallbackReason?: string } {
  if (choice === 'kafkajs') return { client: 'kafkajs' };
  const loaded = loadRdkafka();
  let reason: string | undefined;
  if ('error' in loaded) reason = `node-rdkafka is not available: ${loaded.error.message.split('\n')[0]}`;
  else {
    try {
      rdkafkaSecurityConfig(security);
    } catch (error) {
      if (!(error instanceof UnsupportedByClientError)) throw error;
      reason = `node-rdkafka cannot apply the security settings: ${error.message}`;
    }
  }
  if (reason === undefined) return { client: 'node-rdkafka' };
  if (choice === 'node-rdkafka') throw new Error(`KAFKA_CLIENT is node-rdkafka, but ${reason}`);
  return { client: 'kafkajs', fallbackReason: reason };
}

export function createProducer(options: ProducerOptions): BatchingProducer {
  const logger = options.logger ?? silentLogger;
  const { client, fallbackReason } = resolveKafkaClient(options.client ?? 'auto', options.security);
  if (fallbackReason)
    logger.error('kafka producer falls back to kafkajs (slower, gzip compression only)', {
      clientId: options.clientId,
      reason: fallbackReason,
    });
  if (client === 'node-rdkafka') return createRdkafkaProducer(options);
  if (options.idempotence === 'on')
    logger.warn('KAFKA_PRODUCER_IDEMPOTENCE=on, but kafkajs produces without it (1 request in flight)', {
      clientId: options.clientId,
    });
  const kafka = createKafka({
    brokers: options.brokers,
    clientId: options.clientId,
    security: options.security,
    logger,
    logLevel: 'warn',
  });
  return createKafkajsProducer({ ...options, kafka, logger });
}
