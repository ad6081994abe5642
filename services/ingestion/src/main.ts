// Composition root of the ingestion worker: config, clients, the worker, the health port
// (/_health, /_ready, /_metrics) and graceful shutdown (SIGTERM: the batches in flight finish
// and commit, then the consumers leave their groups). The only place that reads the env.
import { databaseTimeouts, loadConfigOrExit } from '@sett/config';
import { createLogger } from '@sett/logger';
import { createMetricsRegistry, createRouteApp, serverTimeouts, startService } from '@sett/http';
import { createRedis } from '@sett/cache';
import { createPgPool } from '@sett/db';
import { createKafka, createProducer, registerKafkaClientInfo } from '@sett/kafka';
import { noGeoIp, openGeoIp } from '@sett/geoip';
import { ingestionReadiness } from './readiness';
import { ingestionRoutes } from './routes';
import { createIngestionWorker } from './worker';

async function main() {
  const config = loadConfigOrExit(process.env, { kafkaClient: true });
  const logger = createLogger({ level: config.log.level, format: config.log.format, service: 'ingestion' });
  if (config.kafkaBrokers.length === 0) throw new Error('KAFKA_BROKERS is not set');
  const pool = createPgPool({
    databaseUrl: config.databaseUrl,
    max: config.databasePoolSize,
    applicationName: 'sett-ingestion',
    timeouts: databaseTimeouts(config, 'ingestion'),
    onIdleError: (err) => logger.warn('postgres idle connection error', { err: err.message }),
  });
  // An idle client losing its connection (Postgres restarting) must not crash the process;
  // the batch that next uses the pool fails and is retried.
  pool.on('error', (error) => logger.warn('idle Postgres connection failed', { error: error.message }));
  let redisWarnedAt = 0;
  const redis = createRedis({
    url: config.redisUrl,
    name: 'sett-ingestion',
    onError: (error) => {
      if (Date.now() - redisWarnedAt > 10_000) {
        redisWarnedAt = Date.now();
        logger.warn('redis connection error', { error: error.message });
      }
    },
  });
  const kafka = createKafka({
    brokers: config.kafkaBrokers,
    security: config.kafka.security,
    clientId: 'sett-ingestion',
    logger,
    logLevel: 'warn',
    // Counted by the worker (sett_ingestion_offset_resets_total); resets only happen once it runs.
    onOffsetReset: (info) => worker.noteOffsetReset(info),
  });
  // Dead letters go out through the shipped client (node-rdkafka when built); consuming stays
  // on kafkajs (docs/kafka.md, "Consuming").
  const producer = createProducer({
    brokers: config.kafkaBrokers,
    security: config.kafka.security,
    clientId: 'sett-ingestion',
    client: config.kafka.client,
    compression: config.kafka.compression,
    lingerMs: 5,
    idempotence: config.kafka.idempotence,
    sendTimeoutMs: config.kafka.sendTimeoutMs,
    logger,
  });
  const registry = createMetricsRegistry('ingestion');
  const geoip = config.ingestion.geoipEnabled
    ? await openGeoIp({
        path: config.ingestion.geoipDatabasePath,
        onReload: () => logger.info('GeoIP database reloaded', { path: config.ingestion.geoipDatabasePath }),
      })
    : noGeoIp;
  registerKafkaClientInfo(registry, producer.client);
  const worker = createIngestionWorker({
    kafka,
    producer,
    pool,
    redis,
    logger,
    registry,
    config: config.ingestion,
    tokenCacheTtlMs: config.tokenCache.ttlMs,
    messageMaxBytes: config.kafka.messageMaxBytes,
    geoip,
  });

  const app = createRouteApp({
    name: 'ingestion',
    logger,
    registry,
    table: ingestionRoutes,
    deps: {},
    readiness: ingestionReadiness(worker, pool),
  });
  await startService({
    name: 'ingestion',
    app,
    host: config.host,
    port: config.ports.ingestion,
    timeouts: serverTimeouts(config),
    logger,
    handleSignals: true,
    shutdownTimeoutMs: config.shutdownTimeoutMs,
    closers: [() => worker.stop(), async () => void (await redis.quit()), () => pool.end()],
    extra: { topics: config.ingestion.topics, groups: worker.plans.map((p) => p.groupId) },
  });
  await worker.start();
}

main().catch((err) => {
  process.stderr.write(`ingestion failed to start: ${(err as Error).stack ?? err}\n`);
  process.exit(1);
});
