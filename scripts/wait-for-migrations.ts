// Waits until the database named by DATABASE_URL holds every migration this build ships, then
// exits 0. Kubernetes runs it as an init container in front of each service (see
// deploy/k8s/*.yaml), so pods of a new release do not start serving against the old schema
// while the migration Job is still running. Compiled to dist/wait-for-migrations.cjs.
//
// "Holds every migration" means each folder in prisma/migrations has a finished, not rolled back
// row in _prisma_migrations with the same checksum. A database that is *ahead* (it has
// migrations this build does not know) passes too: that is an older pod restarting after a
// newer release migrated, and migrations are forward-only and additive for exactly that case.
//
// Env: DATABASE_URL; MIGRATIONS_WAIT_TIMEOUT_MS (default 600000, 0 = forever).
import { createPgPool, localMigrations } from '@sett/db';

const POLL_MS = 2_000;

type Applied = { migration_name: string; checksum: string; ok: boolean };

async function missingMigrations(databaseUrl: string): Promise<string[]> {
  const local = await localMigrations();
  const client = createPgPool({
    databaseUrl,
    max: 1,
    applicationName: 'sett-wait-for-migrations',
    timeouts: { connectTimeoutMs: 5_000, statementTimeoutMs: 5_000, idleInTransactionTimeoutMs: 5_000 },
  });
  try {
    const table = await client.query<{ present: boolean }>(
      `SELECT to_regclass('public._prisma_migrations') IS NOT NULL AS present`,
    );
    if (!table.rows[0]?.present) return local.map((m) => m.name);
    const rows = await client.query<Applied>(
      `SELECT migration_name, checksum, (finished_at IS NOT NULL AND rolled_back_at IS NULL) AS ok
         FROM _prisma_migrations`,
    );
    const applied = new Map(rows.rows.filter((r) => r.ok).map((r) => [r.migration_name, r.checksum]));
    return local
      .filter((m) => applied.get(m.name) !== m.checksum)
      .map((m) => (applied.has(m.name) ? `${m.name} (checksum differs)` : m.name));
  } finally {
    await client.end();
  }
}

async function main(): Promise<void> {
  const databaseUrl = process.env.DATABASE_URL;
  if (!databaseUrl) throw new Error('DATABASE_URL is not set');
  const timeoutMs = Number(process.env.MIGRATIONS_WAIT_TIMEOUT_MS ?? 600_000);
  const deadline = timeoutMs > 0 ? Date.now() + timeoutMs : Infinity;
  let last = '';
  for (;;) {
    let status: string;
    try {
      const missing = await missingMigrations(databaseUrl);
      if (missing.length === 0) {
        process.stdout.write('wait-for-migrations: schema is up to date\n');
        return;
      }
      status = `waiting for ${missing.length} migration(s): ${missing.join(', ')}`;
    } catch (err) {
      status = `database not reachable yet: ${(err as Error).message}`;
    }
    // One line per change of state, not per poll.
    if (status !== last) process.stdout.write(`wait-for-migrations: ${status}\n`);
    last = status;
    if (Date.now() > deadline) throw new Error(`gave up after ${timeoutMs} ms (${status})`);
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
}

main().catch((err) => {
  process.stderr.write(`wait-for-migrations: ${(err as Error).message}\n`);
  process.exit(1);
});
