// The online path to the events-partitioning migration (packages/db/src/online-partition.ts) on
// a database one migration back, with writes and deletions going on while it copies: afterwards
// events holds exactly the rows the old table held, the schema is the one `prisma migrate deploy`
// builds, Prisma counts the migration as applied and applies the later ones.
import { randomBytes, randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import {
  PARTITION_MIGRATION,
  compareEventsOnline,
  copyEventsOnline,
  endPool,
  ensureDatabase,
  finishPartitionedEvents,
  localMigrations,
  migrateDeploy,
  migrationsUpToDate,
  onlinePartitionState,
  preparePartitionedEvents,
  quoteIdent,
  repoRoot,
  withDatabase,
  withMaintenanceClient,
} from '../src';

jest.setTimeout(120_000);

const serverUrl = process.env.DATABASE_URL || 'postgresql://root@127.0.0.1:5432/postgres';
const names = [
  `sett_online_${randomBytes(4).toString('hex')}`,
  `sett_online_ref_${randomBytes(4).toString('hex')}`,
];
const [url, refUrl] = names.map((n) => withDatabase(serverUrl, n)) as [string, string];
let pool: pg.Pool;

/** Prisma's own bookkeeping table, as `migrate deploy` creates it. */
const PRISMA_TABLE = `CREATE TABLE "_prisma_migrations" (
  "id" VARCHAR(36) PRIMARY KEY NOT NULL, "checksum" VARCHAR(64) NOT NULL, "finished_at" TIMESTAMPTZ,
  "migration_name" VARCHAR(255) NOT NULL, "logs" TEXT, "rolled_back_at" TIMESTAMPTZ,
  "started_at" TIMESTAMPTZ NOT NULL DEFAULT now(), "applied_steps_count" INTEGER NOT NULL DEFAULT 0)`;

/** Brings a database to the schema just before the partitioning migration, recorded as Prisma does. */
async function migrateBeforePartitioning(db: pg.Pool) {
  await db.query(PRISMA_TABLE);
  for (const m of await localMigrations()) {
    if (m.name >= PARTITION_MIGRATION) break;
    await db.query(
      fs.readFileSync(path.join(repoRoot, 'prisma', 'migrations', m.name, 'migration.sql'), 'utf8'),
    );
    await db.query(
      `INSERT INTO _prisma_migrations (id, checksum, finished_at, migration_name, started_at, applied_steps_count)
       VALUES ($1, $2, now(), $3, now(), 1)`,
      [randomUUID(), m.checksum, m.name],
    );
  }
}

/** A UUIDv7 of a moment, as capture assigns them. */
const uuidv7 = (ms: number) => {
  const hex = ms.toString(16).padStart(12, '0') + '7' + randomBytes(10).toString('hex').slice(0, 19);
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-8${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
};

async function insertEvents(db: Pick<pg.Pool, 'query'>, teams: number[], n: number, ageDays = 200) {
  const rows = Array.from({ length: n }, (_, i) => {
    const ms = Date.now() - Math.floor(Math.random() * ageDays * 86_400_000);
    return [uuidv7(ms), teams[i % teams.length], new Date(ms).toISOString()] as const;
  });
  await db.query(
    `INSERT INTO events (uuid, team_id, event, distinct_id, properties, timestamp)
     SELECT u::uuid, t, 'e', 'd-' || t, '{"$current_url": "/"}', ts::timestamptz
       FROM unnest($1::text[], $2::int[], $3::text[]) AS x(u, t, ts)
     ON CONFLICT (team_id, uuid) DO NOTHING`,
    [rows.map((r) => r[0]), rows.map((r) => r[1]), rows.map((r) => r[2])],
  );
}

/** Columns, indexes, constraints, partitions and functions: what must match a normal migration. */
async function schemaSnapshot(db: Pick<pg.Pool, 'query'>): Promise<string> {
  const parts = await Promise.all([
    db.query(`SELECT table_schema, table_name, column_name, data_type, is_nullable, column_default
                FROM information_schema.columns WHERE table_schema IN ('public', 'events_partitions')
               ORDER BY 1, 2, 3`),
    db.query(`SELECT schemaname, indexname, indexdef FROM pg_indexes
               WHERE schemaname IN ('public', 'events_partitions') ORDER BY 1, 2`),
    db.query(`SELECT conname, pg_get_constraintdef(oid) AS def FROM pg_constraint
               WHERE connamespace IN ('public'::regnamespace, 'events_partitions'::regnamespace) ORDER BY 1, 2`),
    db.query(`SELECT c.relname, pg_get_expr(c.relpartbound, c.oid) AS bound FROM pg_inherits i
                JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = 'events'::regclass ORDER BY 1`),
    db.query(`SELECT proname FROM pg_proc WHERE pronamespace = 'events_partitions'::regnamespace ORDER BY 1`),
    db.query(`SELECT tgname FROM pg_trigger WHERE NOT tgisinternal ORDER BY 1`),
  ]);
  return JSON.stringify(
    parts.map((p) => p.rows),
    null,
    1,
  );
}

beforeAll(async () => {
  for (const u of [url, refUrl]) await ensureDatabase(u);
  pool = new pg.Pool({ connectionString: url, max: 6 });
});

afterAll(async () => {
  if (pool) await endPool(pool);
  for (const n of names)
    await withMaintenanceClient(serverUrl, (c) =>
      c.query(`DROP DATABASE IF EXISTS ${quoteIdent(n)} WITH (FORCE)`),
    );
});

it('prepare, copy while events are written and deleted, finish: same rows, same schema, Prisma goes on', async () => {
  await migrateBeforePartitioning(pool);
  const { rows: org } = await pool.query<{ id: string }>(
    `INSERT INTO organizations (id, name, slug) VALUES (gen_random_uuid(), 'o', 'o-' || gen_random_uuid()) RETURNING id`,
  );
  const teams: number[] = [];
  for (let i = 0; i < 3; i++)
    teams.push(
      (
        await pool.query<{ id: number }>(
          `INSERT INTO teams (uuid, organization_id, api_token, name) VALUES (gen_random_uuid(), $1, $2, 't') RETURNING id`,
          [org[0]!.id, `phc_${randomUUID()}`],
        )
      ).rows[0]!.id,
    );
  await insertEvents(pool, teams, 20_000);
  expect(await onlinePartitionState(pool)).toBe('not_started');

  await preparePartitionedEvents(pool);
  expect(await onlinePartitionState(pool)).toBe('prepared');

  // Ingestion and deletions go on during the copy: batches of inserts, some of old timestamps
  // (imports), and deletions of rows the copy may be reading at that moment.
  let writing = true;
  const writer = (async () => {
    let rounds = 0;
    while (writing || rounds < 5) {
      await insertEvents(pool, teams, 200, rounds % 2 ? 1 : 200);
      // Like the management jobs that delete events, a deletion chosen as a deadlock victim
      // (against the copy's row locks) is tried again.
      for (;;) {
        try {
          await pool.query(
            `DELETE FROM events WHERE (team_id, uuid) IN (SELECT team_id, uuid FROM events ORDER BY random() LIMIT 50)`,
          );
          break;
        } catch (error) {
          if ((error as { code?: string }).code !== '40P01') throw error;
        }
      }
      rounds++;
    }
    return rounds;
  })();
  const progress = await copyEventsOnline(pool);
  writing = false;
  expect(await writer).toBeGreaterThanOrEqual(5);
  expect(progress.slices).toBeGreaterThan(teams.length);
  expect(await compareEventsOnline(pool)).toEqual({ missing: 0, extra: 0 });

  // A second copy is resumable: nothing left to do.
  expect((await copyEventsOnline(pool)).slices).toBe(0);

  const before = (
    await pool.query<{ k: string }>(`SELECT team_id || ':' || uuid AS k FROM events ORDER BY 1`)
  ).rows;
  await finishPartitionedEvents(pool);
  const after = (await pool.query<{ k: string }>(`SELECT team_id || ':' || uuid AS k FROM events ORDER BY 1`))
    .rows;
  expect(after).toEqual(before);
  const { rows: kind } = await pool.query(`SELECT relkind FROM pg_class WHERE oid = 'events'::regclass`);
  expect(kind[0].relkind).toBe('p');
  expect(await onlinePartitionState(pool)).toBe('finished');

  // Prisma sees the migration as applied and applies the later ones; the result matches a
  // database migrated the ordinary way.
  await migrateDeploy({ databaseUrl: url });
  expect(await migrationsUpToDate(url)).toBe(true);
  await migrateDeploy({ databaseUrl: refUrl });
  const ref = new pg.Pool({ connectionString: refUrl, max: 1 });
  try {
    expect(await schemaSnapshot(pool)).toEqual(await schemaSnapshot(ref));
  } finally {
    await endPool(ref);
  }
});

it('once finished, prepare and finish refuse to run again', async () => {
  // The first test finished: both guards now see the migration applied.
  await expect(preparePartitionedEvents(pool)).rejects.toThrow(/finished/);
  await expect(finishPartitionedEvents(pool)).rejects.toThrow(/prepare and copy first/);
});
