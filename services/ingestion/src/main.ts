// Composition root of the ingestion worker: config, clients, the worker, the health port
// (/_health, /_ready, /_metrics) and graceful shutdown (SIGTERM: the batches in flight finish
// and commit, then the consumers leave their groups). The only place that reads the env.
import express from 'express';
import { databaseTimeouts, loadConfigOrExit } from '@sett/config';
import { createLogger } from '@sett/logger';
import { createMetricsRegistry, createServiceApp, serverTimeouts, startService } from '@sett/http';
import { createRedis } from '@sett/cache';
import { createPgPool } from '@sett/db';
import { createKafka } from '@sett/kafka';
import { noGeoIp, openGeoIp } from '@sett/geoip';
import { ingestionReadiness } from './readiness';
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
  });
  const registry = createMetricsRegistry('ingestion');
  const geoip = config.ingestion.geoipEnabled
    ? await openGeoIp({
        path: config.ingestion.geoipDatabasePath,
        onReload: () => logger.info('GeoIP database reloaded', { path: config.ingestion.geoipDatabasePath }),
      })
    : noGeoIp;
  const worker = createIngestionWorker({
    kafka,
    pool,
    redis,
    logger,
    registry,
    config: config.ingestion,
    tokenCacheTtlMs: config.tokenCache.ttlMs,
    messageMaxBytes: config.kafka.messageMaxBytes,
    geoip,
  });

  const app = createServiceApp({
    name: 'ingestion',
    logger,
    registry,
    readiness: ingestionReadiness(worker, pool),
    routes: express.Router(),
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
