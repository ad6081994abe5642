// Composition root of the capture service: config, clients, app, start, shutdown.
import express from 'express';
import { loadConfigOrExit } from '@sett/config';
import { createLogger } from '@sett/logger';
import { createMetricsRegistry, createServiceApp, startService } from '@sett/http';
import { createRedis } from '@sett/cache';
import { createBatchingProducer, createKafka } from '@sett/kafka';

async function main() {
  const config = loadConfigOrExit();
  const logger = createLogger({ level: config.log.level, format: config.log.format, service: 'capture' });
  if (config.kafkaBrokers.length === 0) throw new Error('KAFKA_BROKERS is not set');
  const redis = createRedis({ url: config.redisUrl, name: 'sett-capture', onError: (err) => logger.warn('redis error', { err: err.message }) });
  const kafka = createKafka({ brokers: config.kafkaBrokers, clientId: 'sett-capture', logger, logLevel: 'warn' });
  const producer = createBatchingProducer({ kafka, lingerMs: config.kafka.lingerMs, sendTimeoutMs: config.kafka.sendTimeoutMs, logger });
  await producer.connect();
  const app = createServiceApp({
    name: 'capture',
    logger,
    registry: createMetricsRegistry('capture'),
    readiness: {
      kafka: async () => {
        if (!producer.isConnected()) throw new Error('producer not connected');
      },
      redis: async () => void (await redis.ping()),
    },
    routes: express.Router(),
  });
  await startService({
    name: 'capture',
    app,
    host: config.host,
    port: config.ports.capture,
    logger,
    handleSignals: true,
    shutdownTimeoutMs: config.shutdownTimeoutMs,
    closers: [() => producer.disconnect(), async () => void redis.disconnect()],
  });
}

main().catch((err) => {
  process.stderr.write(`capture failed to start: ${(err as Error).stack ?? err}\n`);
  process.exit(1);
});
