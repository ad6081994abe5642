// Composition root of the management service: config, clients, app, start, shutdown.
import { loadConfigOrExit } from '@sett/config';
import { createLogger } from '@sett/logger';
import { createMetricsRegistry, startService } from '@sett/http';
import { createPgPool, createPrisma } from '@sett/db';
import { createRedis } from '@sett/cache';
import { createManagementApp } from './app';

async function main() {
  const config = loadConfigOrExit();
  const logger = createLogger({ level: config.log.level, format: config.log.format, service: 'management' });
  // Prisma for the CRUD, a small plain pool for the event/person reads (hand-written SQL).
  const prisma = createPrisma({ databaseUrl: config.databaseUrl, maxConnections: config.databasePoolSize });
  const pool = createPgPool({
    databaseUrl: config.databaseUrl,
    max: config.databasePoolSize,
    applicationName: 'sett-management',
    onIdleError: (err) => logger.warn('postgres idle connection error', { err: err.message }),
  });
  const redis = createRedis({
    url: config.redisUrl,
    name: 'sett-management',
    onError: (err) => logger.warn('redis error', { err: err.message }),
  });
  const app = createManagementApp({
    prisma,
    pool,
    redis,
    logger,
    registry: createMetricsRegistry('management'),
    config: {
      rateLimitPerMinute: config.management.rateLimitPerMinute,
      publicUrl: config.management.publicUrl,
    },
  });
  await startService({
    name: 'management',
    app,
    host: config.host,
    port: config.ports.management,
    logger,
    handleSignals: true,
    shutdownTimeoutMs: config.shutdownTimeoutMs,
    closers: [() => prisma.$disconnect(), () => pool.end(), async () => void redis.disconnect()],
  });
}

main().catch((err) => {
  process.stderr.write(`management failed to start: ${(err as Error).stack ?? err}\n`);
  process.exit(1);
});
