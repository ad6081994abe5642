// Composition root of the management service: config, clients, app, start, shutdown.
import { resolve } from 'node:path';
import { databaseTimeouts, loadConfigOrExit } from '@sett/config';
import { createLogger, type Logger } from '@sett/logger';
import { createMetricsRegistry, serverTimeouts, startService } from '@sett/http';
import { createPgPool, createPrisma } from '@sett/db';
import { createRedis } from '@sett/cache';
import { deriveCredentialKeys, loadOrCreateKeyFile } from '@sett/keys';
import { sharedHogQLParser } from '@sett/query';
import { createManagementApp } from './app';
import { createBackgroundJobs } from './jobs/background-jobs';
import { createUserCredentials } from './users/user-credentials';

// Where development keeps its generated key when SETT_ENCRYPTION_KEY is unset (.sett/ is git-ignored).
const DEV_KEY_FILE = '.sett/encryption-key';

/** SETT_ENCRYPTION_KEY unset (never in production): a random key kept in DEV_KEY_FILE. */
function developmentKey(logger: Logger): Buffer {
  const path = resolve(DEV_KEY_FILE);
  const file = loadOrCreateKeyFile(path);
  logger.warn(
    `SETT_ENCRYPTION_KEY is not set: using the ${file.created ? 'new ' : ''}development key in ${path}`,
  );
  return file.key;
}

async function main() {
  // TOTP secrets are encrypted with SETT_ENCRYPTION_KEY: required in production.
  const config = loadConfigOrExit(process.env, { requireEncryptionKey: true });
  const logger = createLogger({ level: config.log.level, format: config.log.format, service: 'management' });
  const encryptionKey = config.encryptionKey ?? developmentKey(logger);
  if (!config.management.publicUrl && config.nodeEnv === 'production')
    logger.warn('SETT_PUBLIC_URL is not set: list pages link to their next page with relative URLs');
  // Prisma for the CRUD, a small plain pool for the event/person reads (hand-written SQL).
  const prisma = createPrisma({
    databaseUrl: config.databaseUrl,
    maxConnections: config.databasePoolSize,
    timeouts: databaseTimeouts(config, 'management'),
  });
  const pool = createPgPool({
    databaseUrl: config.databaseUrl,
    max: config.databasePoolSize,
    applicationName: 'sett-management',
    timeouts: databaseTimeouts(config, 'management'),
    onIdleError: (err) => logger.warn('postgres idle connection error', { err: err.message }),
  });
  // /query/ on a pool of its own: key checks and /_ready never wait behind a query. Its
  // statement timeout is the query deadline; each request sets what is left of it.
  const queryPool = createPgPool({
    databaseUrl: config.databaseUrl,
    max: config.query.poolSize,
    applicationName: 'sett-management-query',
    timeouts: { ...databaseTimeouts(config, 'management'), statementTimeoutMs: config.query.timeoutMs },
    sessionSettings: { max_parallel_workers_per_gather: config.query.parallelWorkers },
    onIdleError: (err) => logger.warn('postgres idle connection error (query pool)', { err: err.message }),
  });
  const redis = createRedis({
    url: config.redisUrl,
    name: 'sett-management',
    onError: (err) => logger.warn('redis error', { err: err.message }),
  });
  // Person deletions, retention and purges of deleted projects (docs/data-lifecycle.md).
  const registry = createMetricsRegistry('management');
  const jobs = createBackgroundJobs({ pool, logger, config: config.jobs, registry });
  const app = createManagementApp({
    onJobQueued: () => jobs.wake(),
    prisma,
    pool,
    queryPool,
    redis,
    logger,
    registry,
    encryptionKey,
    config: {
      rateLimitPerMinute: config.management.rateLimitPerMinute,
      userRateLimitPerMinute: config.management.userRateLimitPerMinute,
      publicUrl: config.management.publicUrl,
      sessionTtlMs: config.management.sessionTtlMs,
      consoleDir: config.management.consoleDir,
      login: {
        maxFailuresPerAccount: config.management.loginMaxFailuresPerAccount,
        maxFailuresPerIp: config.management.loginMaxFailuresPerIp,
        lockoutMs: config.management.loginLockoutMs,
      },
      trustedProxyHops: config.trustedProxyHops,
      accessLogSampleRate: config.http.accessLogSampleRate,
      query: config.query,
    },
  });
  await startService({
    name: 'management',
    app,
    host: config.host,
    port: config.ports.management,
    timeouts: serverTimeouts(config),
    logger,
    handleSignals: true,
    shutdownTimeoutMs: config.shutdownTimeoutMs,
    // The runner first: it releases its job while the pool still works.
    closers: [
      () => jobs.stop(),
      () => prisma.$disconnect(),
      () => pool.end(),
      () => queryPool.end(),
      async () => void redis.disconnect(),
    ],
  });
  if (config.jobs.enabled) jobs.start();
  // HogQL's parser (EventsQuery and HogQLQuery) loads in its worker now, not on the first query.
  sharedHogQLParser()
    .warm()
    .then(
      () => logger.info('hogql parser ready'),
      (err: Error) =>
        logger.warn('hogql parser did not load; HogQL queries will be refused', { err: err.message }),
    );
  // Secrets written before encryption: encrypted (TOTP) and re-keyed (backup codes) once, in the
  // background so a slow or unreachable database does not hold up start-up (the next start retries).
  createUserCredentials(prisma, deriveCredentialKeys(encryptionKey))
    .protectLegacyCredentials()
    .then(
      (done) => {
        if (done.totpSecrets + done.backupCodes + done.unreadable > 0)
          logger.info('protected legacy credentials', done);
      },
      (err) => logger.warn('protecting legacy credentials failed', { err: (err as Error).message }),
    );
}

main().catch((err) => {
  process.stderr.write(`management failed to start: ${(err as Error).stack ?? err}\n`);
  process.exit(1);
});
