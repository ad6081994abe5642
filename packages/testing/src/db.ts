// Per-test-file Postgres databases, cloned from the migrated template that the jest global
// setup prepares. Cloning (CREATE DATABASE ... TEMPLATE) takes ~100 ms, far cheaper than
// migrating each time, and gives every test file a database nobody else writes to.
import { createHash, randomBytes } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { quoteIdent, withDatabase, withMaintenanceClient } from '@sett/db';

/**
 * The template's name carries a digest of the migrations, so checkouts with different
 * migrations (branches, worktrees) sharing one Postgres each get their own template instead of
 * dropping and re-migrating one another's while tests clone it.
 */
function migrationsDigest(): string {
  const dir = path.resolve(__dirname, '../../../prisma/migrations');
  const hash = createHash('sha256');
  for (const name of readdirSync(dir).sort()) {
    hash.update(name);
    try {
      hash.update(readFileSync(path.join(dir, name, 'migration.sql')));
    } catch {
      // migration_lock.toml and the like: the name is enough.
    }
  }
  return hash.digest('hex').slice(0, 12);
}

export const TEMPLATE_DATABASE = `sett_test_template_${migrationsDigest()}`;
const DEFAULT_SERVER_URL = 'postgresql://root@127.0.0.1:5432/postgres';
const OBJECT_IN_USE = '55006'; // "source database ... is being accessed by other users"

/** A URL on the Postgres server the tests use (DATABASE_URL, set by the global setup). */
export function testServerUrl(): string {
  return process.env.DATABASE_URL || DEFAULT_SERVER_URL;
}

/** A name unique to this run, for topics, consumer groups, redis prefixes, databases. */
export function uniqueName(prefix: string): string {
  return `${prefix}_${Date.now().toString(36)}_${randomBytes(4).toString('hex')}`;
}

export type TestDatabase = {
  /** Connection URL of the new database. */
  url: string;
  name: string;
  /** Drops the database, disconnecting whoever is still connected. End the test's own pools
   * with endPool first: a session it cuts reaches a plain pg pool as an unhandled 'error'. */
  drop(): Promise<void>;
};

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A fresh, fully migrated database of its own, cloned from the test template. */
export async function createTestDatabase(): Promise<TestDatabase> {
  const serverUrl = testServerUrl();
  const name = uniqueName('sett_t').toLowerCase();
  await withMaintenanceClient(serverUrl, async (client) => {
    // Cloning fails while anyone is connected to the template; the only expected connection is
    // a global setup (of another concurrent jest run) checking it, which is brief, so retry.
    for (let attempt = 0; ; attempt++) {
      try {
        await client.query(`CREATE DATABASE ${quoteIdent(name)} TEMPLATE ${quoteIdent(TEMPLATE_DATABASE)}`);
        return;
      } catch (error) {
        if ((error as { code?: string }).code !== OBJECT_IN_USE || attempt >= 50) throw error;
        await sleep(100 + Math.random() * 100);
      }
    }
  });
  return {
    url: withDatabase(serverUrl, name),
    name,
    drop: () =>
      withMaintenanceClient(serverUrl, async (client) => {
        await client.query(`DROP DATABASE IF EXISTS ${quoteIdent(name)} WITH (FORCE)`);
      }),
  };
}
