// Decide built from its configuration: the Postgres pool, the Redis connections (reads, and the
// flags-changed subscription), the GeoIP database and the app over them. main.ts serves the
// result; `pnpm bench decide` serves the same answerer behind bare node:http to measure what
// the route mechanism costs. Reads no environment: the config comes in.
import { databaseTimeouts, type Config } from '@sett/config';
import type { Logger } from '@sett/logger';
import { createMetricsRegistry } from '@sett/http';
import { createPgPool } from '@sett/db';
import { createRedis } from '@sett/cache';
import { noGeoIp, openGeoIp } from '@sett/geoip';
import { createDecideApp, type DecideApp } from './app';

export interface ComposedDecide {
  decide: DecideApp;
  /** Closes what compose opened, after decide.close(). */
  closers: Array<() => Promise<void>>;
}

export async function composeDecide(config: Config, logger: Logger): Promise<ComposedDecide> {
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
  return {
    decide,
    closers: [
      () => decide.close(),
      () => pool.end(),
      async () => {
        subscriber.disconnect();
        redis.disconnect();
      },
    ],
  };
}
