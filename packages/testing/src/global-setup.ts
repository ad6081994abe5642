// Jest global setup for integration tests, run once per jest run before any test file:
// prepares the migrated template database that createTestDatabase clones, starts the Kafka
// development broker (unless KAFKA_BROKERS points at one), and sets env defaults that the test
// workers inherit.
import {
  ensureDatabase,
  migrateDeploy,
  migrationsUpToDate,
  quoteIdent,
  withDatabase,
  withMaintenanceClient,
} from '@sett/db';
import { TEMPLATE_DATABASE, testServerUrl } from './db';

type BrokerHandle = { bootstrap: string; stop(): Promise<void> };
// The teardown runs in this same process, so it finds the handle here.
export const BROKER_HANDLE_KEY = '__settDevBroker';
const TEMPLATE_LOCK_KEY = 0x5e77_7e57; // pg advisory lock: one jest run at a time fixes the template

async function prepareTemplate(serverUrl: string): Promise<void> {
  const templateUrl = withDatabase(serverUrl, TEMPLATE_DATABASE);
  // Several jest runs may share this Postgres (other developers, CI shards): the lock keeps
  // two of them from dropping and migrating the template at once.
  await withMaintenanceClient(serverUrl, async (lock) => {
    await lock.query('SELECT pg_advisory_lock($1)', [TEMPLATE_LOCK_KEY]);
    try {
      const created = await ensureDatabase(templateUrl);
      if (!created && !(await migrationsUpToDate(templateUrl))) {
        // Stale (migrations changed, were edited, or a previous run died half way): start over
        // rather than trying to migrate a template whose history no longer matches.
        await lock.query(`DROP DATABASE IF EXISTS ${quoteIdent(TEMPLATE_DATABASE)} WITH (FORCE)`);
        await ensureDatabase(templateUrl);
        await migrateDeploy({ databaseUrl: templateUrl });
      } else if (created) {
        await migrateDeploy({ databaseUrl: templateUrl });
      }
    } finally {
      await lock.query('SELECT pg_advisory_unlock($1)', [TEMPLATE_LOCK_KEY]);
    }
  });
}

async function startBroker(): Promise<void> {
  if (process.env.KAFKA_BROKERS) return;
  // Loaded only when needed, so database-only runs work with KAFKA_BROKERS set to anything.
  const { startDevBroker } = await import('@sett/devstack');
  const broker: BrokerHandle = await startDevBroker();
  (globalThis as Record<string, unknown>)[BROKER_HANDLE_KEY] = broker;
  process.env.KAFKA_BROKERS = broker.bootstrap;
}

export default async function globalSetup(): Promise<void> {
  // Workers are forked after this returns and inherit process.env.
  process.env.DATABASE_URL ||= testServerUrl();
  process.env.REDIS_URL ||= 'redis://127.0.0.1:6379';
  await Promise.all([prepareTemplate(process.env.DATABASE_URL), startBroker()]);
}
