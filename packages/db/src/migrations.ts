// Runs and inspects Prisma migrations from code: `prisma migrate deploy` as a child process
// (the CLI owns the migration engine), plus a cheap "is this database up to date" check that
// compares prisma/migrations with the _prisma_migrations table.
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readFile, readdir } from 'node:fs/promises';
import path from 'node:path';
import pg from 'pg';

/** The workspace root (this file is packages/db/src/migrations.ts). */
export const repoRoot = path.resolve(__dirname, '..', '..', '..');
const migrationsDir = path.join(repoRoot, 'prisma', 'migrations');
const prismaBin = path.join(
  repoRoot,
  'node_modules',
  '.bin',
  process.platform === 'win32' ? 'prisma.cmd' : 'prisma',
);

export type MigrateDeployOptions = { databaseUrl: string; timeoutMs?: number };

/** Applies pending migrations to `databaseUrl`; rejects with the CLI's output on failure. */
export function migrateDeploy({
  databaseUrl,
  timeoutMs = 120_000,
}: MigrateDeployOptions): Promise<{ output: string }> {
  const env = {
    ...process.env,
    DATABASE_URL: databaseUrl,
    PRISMA_HIDE_UPDATE_MESSAGE: '1',
    CHECKPOINT_DISABLE: '1',
  };
  return new Promise((resolve, reject) => {
    execFile(
      prismaBin,
      ['migrate', 'deploy'],
      { cwd: repoRoot, env, timeout: timeoutMs, maxBuffer: 16 * 1024 * 1024 },
      (error, stdout, stderr) => {
        const output = `${stdout}${stderr}`;
        if (error)
          reject(new Error(`prisma migrate deploy failed (${error.message.split('\n')[0]}):\n${output}`));
        else resolve({ output });
      },
    );
  });
}

export type LocalMigration = { name: string; checksum: string };

/** The migrations in prisma/migrations, in order, with Prisma's checksum (sha256 of the SQL). */
export async function localMigrations(): Promise<LocalMigration[]> {
  const entries = await readdir(migrationsDir, { withFileTypes: true });
  const names = entries
    .filter((e) => e.isDirectory())
    .map((e) => e.name)
    .sort();
  return Promise.all(
    names.map(async (name) => {
      const sql = await readFile(path.join(migrationsDir, name, 'migration.sql'));
      return { name, checksum: createHash('sha256').update(sql).digest('hex') };
    }),
  );
}

/**
 * True when `databaseUrl` has exactly the local migrations applied, unchanged (same
 * checksums), none failed or rolled back. False for a database Prisma never migrated.
 */
export async function migrationsUpToDate(databaseUrl: string): Promise<boolean> {
  const local = await localMigrations();
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    const table = await client.query(
      `SELECT to_regclass('public._prisma_migrations') IS NOT NULL AS present`,
    );
    if (!table.rows[0]?.present) return false;
    const applied = await client.query<{ migration_name: string; checksum: string; ok: boolean }>(
      `SELECT migration_name, checksum, (finished_at IS NOT NULL AND rolled_back_at IS NULL) AS ok
         FROM _prisma_migrations ORDER BY migration_name`,
    );
    if (applied.rows.some((r) => !r.ok) || applied.rows.length !== local.length) return false;
    return applied.rows.every(
      (r, i) => r.migration_name === local[i]?.name && r.checksum === local[i]?.checksum,
    );
  } finally {
    await client.end();
  }
}
