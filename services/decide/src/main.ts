// Composition root of the decide service: config, clients (Postgres pool, Redis for reads and a
// second connection for the flags-changed subscription, the GeoIP database), app, start,
// graceful shutdown. The only place that reads the environment. With DECIDE_WORKERS > 1 this
// process becomes a cluster primary and each forked worker runs the rest.
import cluster from 'node:cluster';
import { databaseTimeouts, loadConfigOrExit } from '@sett/config';
import { createLogger } from '@sett/logger';
import {
  createMetricsRegistry,
  notifyWorkerReady,
  resolveWorkers,
  runClusterPrimary,
  serverTimeouts,
  startService,
} from '@sett/http';
import { createPgPool } from '@sett/db';
import { createRedis } from '@sett/cache';
import { createDecideApp } from './app';
import { noGeoIp, openGeoIp } from '@sett/geoip';

async function main() {
  const config = loadConfigOrExit();
  const logger = createLogger({ level: config.log.level, format: config.log.format, service: 'decide' });
  const workers = resolveWorkers(config.decide.workers);
  if (workers > 1 && cluster.isPrimary) {
    runClusterPrimary({ name: 'decide', workers, logger });
    return;
  }
  const timeouts = databaseTimeouts(config, 'decide');
  const pool = createPgPool({
    databaseUrl: config.databaseUrl,
    max: config.databasePoolSize,
    applicationName: 'sett-decide',
    timeouts,
    onIdleError: (err) => logger.warn('postgres idle connection error', { err: err.message }),
  });
  const onRedisError = (err: Error) => logger.warn('redis error', { err: err.message });
  const redis = createRedis({ url: config.redisUrl, name: 'sett-decide', onError: onRedisError });
  const subscriber = createRedis({ url: config.redisUrl, name: 'sett-decide-sub', onError: onRedisError });
  const geoip = config.decide.geoipEnabled
    ? await openGeoIp({
        path: config.decide.geoipDatabasePath,
        onReload: () => logger.info('GeoIP database reloaded', { path: config.decide.geoipDatabasePath }),
      })
    : noGeoIp;

  const decide = createDecideApp({
    redis,
    subscriber,
    pool,
    logger,
    registry: createMetricsRegistry('decide'),
    geoip,
    config: {
      flagCacheTtlMs: config.decide.flagCacheTtlMs,
      personCacheTtlMs: config.decide.personCacheTtlMs,
      tokenCacheTtlMs: config.tokenCache.ttlMs,
      maxBodyBytes: config.decide.maxBodyBytes,
      // A request waits for Postgres no longer than one statement may run (DECIDE_DATABASE_TIMEOUT_MS).
      postgresBudgetMs: timeouts.statementTimeoutMs,
      trustedProxyHops: config.trustedProxyHops,
      decompressionBudgetBytes: config.decompressionBudgetBytes,
      accessLogSampleRate: config.http.accessLogSampleRate,
    },
  });
  const service = await startService({
    // A worker's own "ready" line must not read as the whole service being ready.
    name: cluster.isWorker ? 'decide worker' : 'decide',
    app: decide.app,
    host: config.host,
    port: config.ports.decide,
    timeouts: serverTimeouts(config),
    logger,
    handleSignals: true,
    shutdownTimeoutMs: config.shutdownTimeoutMs,
    extra: { geoip: config.decide.geoipEnabled, ...(cluster.isWorker ? { worker: cluster.worker?.id } : {}) },
    closers: [
      () => decide.close(),
      () => pool.end(),
      async () => {
        subscriber.disconnect();
        redis.disconnect();
      },
    ],
  });
  notifyWorkerReady(service.port);
}

main().catch((err) => {
  process.stderr.write(`decide failed to start: ${(err as Error).stack ?? err}\n`);
  process.exit(1);
});
