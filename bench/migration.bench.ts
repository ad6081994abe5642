// `pnpm bench migration`: how long migration 20261123110000_events_partitions_and_jobs takes per
// million events. It renames `events`, creates the partitioned table and copies every row in one
// transaction (writes to events wait for all of it). A scratch database is brought to the schema
// just before it (the earlier migration files, run as Prisma runs them: each file whole), filled
// with BENCH_MIGRATION_EVENTS events (default 1,000,000: UUIDv7 over the last 12 months, five
// projects, ~400-byte properties, like captured page views), then the migration file is run.
// Baseline, same run, same rows: copying them into a plain table with the same primary key and
// indexes (what any copy of the table costs). Prints seconds per million events and the ratio.
import fs from 'node:fs';
import path from 'node:path';
import { createPgPool, ensureDatabase, quoteIdent, withDatabase, withMaintenanceClient } from '@sett/db';
import type { Pool } from 'pg';
import { fmt, ratioLine } from './lib';

const TARGET = '20261123110000_events_partitions_and_jobs';
const MIGRATIONS = path.join(__dirname, '..', 'prisma', 'migrations');

async function timed(fn: () => Promise<unknown>): Promise<number> {
  const t0 = process.hrtime.bigint();
  await fn();
  return Number(process.hrtime.bigint() - t0) / 1e9;
}

/** The schema just before TARGET: every earlier migration file, in order, each in one query. */
export async function migrateBefore(pool: Pool, target = TARGET): Promise<void> {
  const names = fs
    .readdirSync(MIGRATIONS)
    .filter((n) => fs.statSync(path.join(MIGRATIONS, n)).isDirectory())
    .sort();
  if (!names.includes(target)) throw new Error(`no migration ${target}`);
  for (const name of names.filter((n) => n < target))
    await pool.query(fs.readFileSync(path.join(MIGRATIONS, name, 'migration.sql'), 'utf8'));
}

export function migrationSql(name = TARGET): string {
  return fs.readFileSync(path.join(MIGRATIONS, name, 'migration.sql'), 'utf8');
}

/** Five projects and `rows` events in the unpartitioned table, spread over the last 12 months. */
export async function fillEvents(pool: Pool, rows: number): Promise<number[]> {
  const { rows: org } = await pool.query<{ id: string }>(
    `INSERT INTO organizations (id, name, slug) VALUES (gen_random_uuid(), 'bench', 'bench-' || gen_random_uuid()) RETURNING id`,
  );
  const teams: number[] = [];
  for (let i = 0; i < 5; i++) {
    const { rows: t } = await pool.query<{ id: number }>(
      `INSERT INTO teams (uuid, organization_id, api_token, name) VALUES (gen_random_uuid(), $1, 'phc_bench_' || md5(random()::text), 'bench') RETURNING id`,
      [org[0]!.id],
    );
    teams.push(t[0]!.id);
  }
  const now = Date.now();
  const span = 365 * 86_400_000;
  // In chunks, so no single statement holds the whole fill.
  const chunk = 250_000;
  for (let done = 0; done < rows; done += chunk) {
    const n = Math.min(chunk, rows - done);
    await pool.query(
      `INSERT INTO events (uuid, team_id, event, distinct_id, properties, timestamp, created_at)
       SELECT (lpad(to_hex(ms), 12, '0') || '7' || substr(h, 1, 3) || '8' || substr(h, 4, 15))::uuid,
              ($4::int[])[1 + i % 5], CASE WHEN i % 3 = 0 THEN 'click' ELSE '$pageview' END,
              'user-' || (i % 50000),
              jsonb_build_object('$current_url', 'https://example.com/page/' || (i % 500),
                '$browser', 'Chrome', '$os', 'Mac OS X', '$device_type', 'Desktop',
                '$referrer', 'https://www.google.com/', '$lib', 'web', '$lib_version', '1.200.0',
                '$screen_width', 1920, '$screen_height', 1080, '$session_id', h,
                '$ip', '203.0.113.' || (i % 250), '$geoip_country_code', 'GB'),
              to_timestamp(ms / 1000.0), to_timestamp(ms / 1000.0)
         FROM generate_series($1::int + 1, $1::int + $2::int) AS i,
              LATERAL (SELECT ($3::bigint - (i::bigint * ${span}::bigint) / ${rows}::bigint) AS ms,
                              md5(i::text) AS h) x`,
      [done, n, now, teams],
    );
  }
  return teams;
}

export async function run(): Promise<boolean> {
  const serverUrl = process.env.DATABASE_URL || 'postgresql://root@127.0.0.1:5432/sett';
  const rows = Number(process.env.BENCH_MIGRATION_EVENTS ?? 1_000_000);
  const name = 'sett_bench_migration';
  const url = withDatabase(serverUrl, name);
  const drop = () =>
    withMaintenanceClient(serverUrl, (c) =>
      c.query(`DROP DATABASE IF EXISTS ${quoteIdent(name)} WITH (FORCE)`),
    );
  await drop();
  await ensureDatabase(url);
  const pool = createPgPool({ databaseUrl: url, max: 2 });
  try {
    await migrateBefore(pool);
    const fillSeconds = await timed(() => fillEvents(pool, rows));
    await pool.query('VACUUM ANALYZE events');
    const { rows: size } = await pool.query<{ bytes: string }>(
      `SELECT pg_total_relation_size('events')::text AS bytes`,
    );
    console.log(
      `${fmt(rows)} events (${(Number(size[0]!.bytes) / 1e9).toFixed(2)} GB with indexes) generated in ${fillSeconds.toFixed(1)} s`,
    );

    // Baseline: the same rows into a plain table with the same key and indexes, in one statement.
    await pool.query('CREATE TABLE events_copy (LIKE events INCLUDING ALL)');
    const baseline = await timed(() => pool.query('INSERT INTO events_copy SELECT * FROM events'));
    await pool.query('DROP TABLE events_copy');
    await pool.query('CHECKPOINT');

    const migration = await timed(() => pool.query(migrationSql()));
    const { rows: after } = await pool.query<{ n: string }>('SELECT count(*)::text AS n FROM events');
    const ok = Number(after[0]!.n) === rows;
    const perMillion = (s: number) => (s * 1_000_000) / rows;
    console.log(
      ratioLine(
        `migration ${TARGET}, seconds per million events`,
        perMillion(migration),
        perMillion(baseline),
        's',
      ),
    );
    console.log(
      `  the whole migration: ${migration.toFixed(1)} s for ${fmt(rows)} events (writes to events wait for all of it); plain copy ${baseline.toFixed(1)} s`,
    );
    if (!ok) console.log(`  FAIL: ${after[0]!.n} events after the migration, expected ${rows}`);
    return ok;
  } finally {
    await pool.end();
    await drop();
  }
}
