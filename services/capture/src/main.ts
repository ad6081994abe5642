// Composition root of the capture service: config, clients, app, start, shutdown. On SIGTERM
// startService stops accepting, lets in-flight requests finish (their sends included), then the
// closers flush and disconnect the producer and close Redis and Postgres. With CAPTURE_WORKERS
// above 1 (or "auto") this process becomes a cluster primary and each forked worker runs the rest.
import cluster from 'node:cluster';
import { databaseTimeouts, loadConfigOrExit } from '@sett/config';
import { createLogger } from '@sett/logger';
import {
  createMetricsRegistry,
  startService,
  notifyWorkerReady,
  resolveWorkers,
  runClusterPrimary,
  serverTimeouts,
} from '@sett/http';
import { createRedis, createTokenResolver } from '@sett/cache';
import { createPgPool } from '@sett/db';
import { createProducer, registerKafkaClientInfo, TOPICS } from '@sett/kafka';
import { createCaptureApp } from './app';
import { createProjectLoader } from './capture/project-store';

/** How long after the statement timeout a token lookup gives up (Postgres' own error comes first). */
const LOOKUP_GRACE_MS = 250;

async function main() {
  const config = loadConfigOrExit(process.env, { kafkaClient: true });
  const logger = createLogger({ level: config.log.level, format: config.log.format, service: 'capture' });
  if (config.kafkaBrokers.length === 0) throw new Error('KAFKA_BROKERS is not set');
  const workers = resolveWorkers(config.capture.workers);
  if (workers > 1 && cluster.isPrimary) {
    runClusterPrimary({ name: 'capture', workers, logger });
    return;
  }

  const redis = createRedis({
    url: config.redisUrl,
    name: 'sett-capture',
    onError: (err) => logger.warn('redis error', { err: err.message }),
  });
  // Token cache misses only: a small pool is plenty. Every lookup is on a request's critical
  // path, so opening a connection gets no more time than a statement, and the lookup as a whole
  // gives up shortly after (pg's client-side query timeout is a full second later).
  const timeouts = databaseTimeouts(config, 'capture');
  const pool = createPgPool({
    databaseUrl: config.databaseUrl,
    max: Math.min(config.databasePoolSize, 4),
    applicationName: 'sett-capture',
    timeouts: {
      ...timeouts,
      connectTimeoutMs: Math.min(timeouts.connectTimeoutMs, timeouts.statementTimeoutMs),
    },
    onIdleError: (err) => logger.warn('postgres idle connection error', { err: err.message }),
  });
  pool.on('error', (err) => logger.warn('postgres pool error', { err: err.message }));
  // Management publishes rotated and deleted projects' tokens: dropped from the cache at once.
  const subscriber = createRedis({
    url: config.redisUrl,
    name: 'sett-capture-sub',
    onError: (err) => logger.warn('redis error', { err: err.message }),
  });
  const tokenResolver = createTokenResolver({
    redis,
    subscriber,
    loadFromDb: createProjectLoader(pool, { timeoutMs: timeouts.statementTimeoutMs + LOOKUP_GRACE_MS }),
    ttlMs: config.tokenCache.ttlMs,
  });

  // node-rdkafka when it was built at install, else kafkajs (logged as an error, and named by
  // sett_kafka_client_info on /_metrics).
  const producer = createProducer({
    brokers: config.kafkaBrokers,
    security: config.kafka.security,
    clientId: 'sett-capture',
    client: config.kafka.client,
    compression: config.kafka.compression,
    lingerMs: config.kafka.lingerMs,
    idempotence: config.kafka.idempotence,
    maxBatchMessages: config.kafka.batchMaxMessages,
    sendTimeoutMs: config.kafka.sendTimeoutMs,
    maxMessageBytes: config.kafka.messageMaxBytes,
    logger,
    readiness: { probeTopics: [TOPICS.main] },
  });
  await producer.connect();

  const registry = createMetricsRegistry('capture');
  registerKafkaClientInfo(registry, producer.client);
  const app = createCaptureApp({ config, logger, redis, tokenResolver, producer, registry });
  const service = await startService({
    // A worker's own "ready" line must not read as the whole service being ready.
    name: cluster.isWorker ? 'capture worker' : 'capture',
    app,
    host: config.host,
    port: config.ports.capture,
    timeouts: serverTimeouts(config),
    logger,
    handleSignals: true,
    shutdownTimeoutMs: config.shutdownTimeoutMs,
    closers: [
      () => producer.disconnect(),
      async () => {
        tokenResolver.close();
        subscriber.disconnect();
        redis.disconnect();
      },
      () => pool.end(),
    ],
    ...(cluster.isWorker ? { extra: { worker: cluster.worker?.id, pid: process.pid } } : {}),
  });
  notifyWorkerReady(service.port);
}

main().catch((err) => {
  process.stderr.write(`capture failed to start: ${(err as Error).stack ?? err}\n`);
  process.exit(1);
});
