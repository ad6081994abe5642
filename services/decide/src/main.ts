// Composition root of the decide service: config, clients, app, start, shutdown.
import express from 'express';
import { loadConfigOrExit } from '@sett/config';
import { createLogger } from '@sett/logger';
import { createMetricsRegistry, createServiceApp, startService } from '@sett/http';
import { createPgPool } from '@sett/db';
import { createRedis } from '@sett/cache';

async function main() {
  const config = loadConfigOrExit();
  const logger = createLogger({ level: config.log.level, format: config.log.format, service: 'decide' });
  const pool = createPgPool({ databaseUrl: config.databaseUrl, max: config.databasePoolSize, applicationName: 'sett-decide' });
  const redis = createRedis({ url: config.redisUrl, name: 'sett-decide', onError: (err) => logger.warn('redis error', { err: err.message }) });
  const app = createServiceApp({
    name: 'decide',
    logger,
    registry: createMetricsRegistry('decide'),
    readiness: {
      postgres: async () => void (await pool.query('SELECT 1')),
      redis: async () => void (await redis.ping()),
    },
    routes: express.Router(),
  });
  await startService({
    name: 'decide',
    app,
    host: config.host,
    port: config.ports.decide,
    logger,
    handleSignals: true,
    shutdownTimeoutMs: config.shutdownTimeoutMs,
    closers: [() => pool.end(), async () => void redis.disconnect()],
  });
}

main().catch((err) => {
  process.stderr.write(`decide failed to start: ${(err as Error).stack ?? err}\n`);
  process.exit(1);
});
