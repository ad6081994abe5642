// The online path to migration 20261123110000_events_partitions_and_jobs, for a database whose
// `events` table is too large to copy while every write waits (docs/operations.md). It reaches
// the schema the migration makes, and records the migration as applied, so `prisma migrate
// deploy` goes on with the migrations after it:
//   prepare  creates the partitioned table beside `events` as `events_next` (the migration's
//            columns, key, indexes and partitions) and statement triggers that copy every insert
//            into `events` and every delete from it to `events_next` from then on;
//   copy     copies the existing rows, one project and one month of timestamps per transaction
//            (resumable: finished slices are recorded), while ingestion keeps writing;
//   finish   with ingestion stopped: in one short transaction, swaps the tables, drops the old
//            one, runs the rest of the migration (the background_jobs table) and records the
//            migration in _prisma_migrations with Prisma's checksum.
// A row the copy reads is locked (FOR KEY SHARE) so a deletion racing it waits and then deletes
// the copied row too; a row inserted meanwhile is copied by the trigger and skipped by the copy
// (ON CONFLICT DO NOTHING), so nothing is lost or resurrected.
import { createHash, randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type pg from 'pg';
import { repoRoot } from './migrations';

export const PARTITION_MIGRATION = '20261123110000_events_partitions_and_jobs';
const PREVIOUS_MIGRATION = '20261123090000_team_retention_and_deletion';

type Db = Pick<pg.Pool, 'query'>;

function migrationText(): string {
  return fs.readFileSync(
    path.join(repoRoot, 'prisma', 'migrations', PARTITION_MIGRATION, 'migration.sql'),
    'utf8',
  );
}

/** The migration split where it copies the rows: the DDL before, the DDL after. */
function migrationParts(): { before: string; after: string } {
  const sql = migrationText();
  const copyAt = sql.indexOf('INSERT INTO "events" SELECT');
  const dropAt = sql.indexOf('DROP TABLE "events_unpartitioned";');
  if (copyAt < 0 || dropAt < 0)
    throw new Error(`${PARTITION_MIGRATION} no longer has the expected copy step`);
  return {
    before: sql.slice(0, copyAt),
    after: sql.slice(dropAt + 'DROP TABLE "events_unpartitioned";'.length),
  };
}

/**
 * The migration's DDL for the new table, aimed at `events_next` beside the live `events`: the
 * renames of the old table are left out and the new names get a `_next` suffix until finish.
 */
function prepareSql(): string {
  const { before } = migrationParts();
  const create = before.slice(before.indexOf('CREATE TABLE "events" ('));
  return (
    'CREATE SCHEMA IF NOT EXISTS "events_partitions";\n' +
    create
      .replace('CREATE TABLE "events" (', 'CREATE TABLE "events_next" (')
      .replace('CONSTRAINT "events_pkey"', 'CONSTRAINT "events_next_pkey"')
      .replace(
        /CREATE INDEX "(events_team_id_[a-z_]+_idx)" ON "events"/g,
        'CREATE INDEX "$1_next" ON "events_next"',
      )
      .replace('PARTITION OF "events" DEFAULT', 'PARTITION OF "events_next" DEFAULT')
      .replace(
        '\'CREATE TABLE "events_partitions".%I PARTITION OF "events"',
        '\'CREATE TABLE "events_partitions".%I PARTITION OF "events_next"',
      )
  );
}

export type OnlinePartitionState = 'not_started' | 'prepared' | 'finished';

export async function onlinePartitionState(db: Db): Promise<OnlinePartitionState> {
  const { rows } = await db.query<{ next: boolean; applied: boolean; previous: boolean }>(
    `SELECT to_regclass('public.events_next') IS NOT NULL AS next,
            EXISTS (SELECT 1 FROM _prisma_migrations WHERE migration_name = $1 AND finished_at IS NOT NULL
                      AND rolled_back_at IS NULL) AS applied,
            EXISTS (SELECT 1 FROM _prisma_migrations WHERE migration_name = $2 AND finished_at IS NOT NULL) AS previous`,
    [PARTITION_MIGRATION, PREVIOUS_MIGRATION],
  );
  const r = rows[0]!;
  if (r.applied) return 'finished';
  if (!r.previous) throw new Error(`${PREVIOUS_MIGRATION} is not applied: migrate up to it first`);
  return r.next ? 'prepared' : 'not_started';
}

/** Creates events_next and the mirroring triggers. Writes to events go on. */
export async function preparePartitionedEvents(pool: pg.Pool): Promise<void> {
  const state = await onlinePartitionState(pool);
  if (state !== 'not_started') throw new Error(`cannot prepare: the online migration is ${state}`);
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    await client.query(prepareSql());
    await client.query(`
      CREATE TABLE "events_partitions"."online_copy_done" (
        team_id INTEGER NOT NULL, month TIMESTAMPTZ NOT NULL, rows BIGINT NOT NULL,
        PRIMARY KEY (team_id, month));
      CREATE FUNCTION "events_partitions"."mirror_inserts"() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        INSERT INTO "events_next" SELECT * FROM inserted ON CONFLICT DO NOTHING;
        RETURN NULL;
      END $$;
      CREATE FUNCTION "events_partitions"."mirror_deletes"() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        DELETE FROM "events_next" n USING deleted d WHERE n.team_id = d.team_id AND n.uuid = d.uuid;
        RETURN NULL;
      END $$;
      CREATE TRIGGER "events_mirror_inserts" AFTER INSERT ON "events"
        REFERENCING NEW TABLE AS inserted FOR EACH STATEMENT EXECUTE FUNCTION "events_partitions"."mirror_inserts"();
      CREATE TRIGGER "events_mirror_deletes" AFTER DELETE ON "events"
        REFERENCING OLD TABLE AS deleted FOR EACH STATEMENT EXECUTE FUNCTION "events_partitions"."mirror_deletes"();
    `);
    await client.query('COMMIT');
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw error;
  } finally {
    client.release();
  }
}

export type CopyProgress = { slices: number; copied: number; remaining: number };

/**
 * Copies the rows of events into events_next, one (project, month of timestamp) slice per
 * transaction, skipping slices already done. Read through the (team_id, timestamp) index.
 */
export async function copyEventsOnline(
  pool: pg.Pool,
  onSlice?: (p: CopyProgress & { teamId: number; month: string; rows: number }) => void,
): Promise<CopyProgress> {
  if ((await onlinePartitionState(pool)) !== 'prepared') throw new Error('run prepare first');
  const { rows: slices } = await pool.query<{ team_id: number; month: Date }>(
    `SELECT t.id AS team_id, m.month
       FROM teams t,
            LATERAL (SELECT min(timestamp) AS lo, max(timestamp) AS hi FROM events WHERE team_id = t.id) b,
            LATERAL generate_series(date_trunc('month', b.lo, 'UTC'), b.hi, interval '1 month') AS m(month)
      WHERE b.lo IS NOT NULL
        AND NOT EXISTS (SELECT 1 FROM "events_partitions"."online_copy_done" d WHERE d.team_id = t.id AND d.month = m.month)
      ORDER BY t.id, m.month`,
  );
  const progress: CopyProgress = { slices: 0, copied: 0, remaining: slices.length };
  for (const s of slices) {
    const rows = await copySlice(pool, s.team_id, s.month);
    progress.slices++;
    progress.copied += rows;
    progress.remaining--;
    onSlice?.({ ...progress, teamId: s.team_id, month: s.month.toISOString().slice(0, 7), rows });
  }
  return progress;
}

const RETRIED = new Set(['40P01', '40001']); // deadlock, serialization failure
const MAX_ATTEMPTS = 20;

/**
 * One slice in one transaction. The rows it reads are locked (FOR KEY SHARE) so a deletion
 * cannot slip between the read and the copy; a deletion locking the same rows in another order
 * can deadlock with it, and Postgres then aborts one of the two: the copy tries again (the
 * management jobs that delete retry too).
 */
async function copySlice(pool: pg.Pool, teamId: number, month: Date): Promise<number> {
  for (let attempt = 1; ; attempt++) {
    const client = await pool.connect();
    try {
      await client.query('BEGIN');
      const r = await client.query(
        `INSERT INTO "events_next"
           SELECT * FROM "events"
            WHERE team_id = $1 AND timestamp >= $2 AND timestamp < $2 + interval '1 month'
            FOR KEY SHARE
         ON CONFLICT DO NOTHING`,
        [teamId, month],
      );
      await client.query(`INSERT INTO "events_partitions"."online_copy_done" VALUES ($1, $2, $3)`, [
        teamId,
        month,
        r.rowCount ?? 0,
      ]);
      await client.query('COMMIT');
      return r.rowCount ?? 0;
    } catch (error) {
      await client.query('ROLLBACK').catch(() => undefined);
      if (!RETRIED.has((error as { code?: string }).code ?? '') || attempt >= MAX_ATTEMPTS) throw error;
    } finally {
      client.release();
    }
    await new Promise((r) => setTimeout(r, Math.min(1000, 20 * attempt)));
  }
}

/** Rows of events not (yet) in events_next, and the other way round: both 0 before finish. */
export async function compareEventsOnline(db: Db): Promise<{ missing: number; extra: number }> {
  const { rows } = await db.query<{ missing: string; extra: string }>(
    `SELECT (SELECT count(*) FROM "events" e WHERE NOT EXISTS
               (SELECT 1 FROM "events_next" n WHERE n.team_id = e.team_id AND n.uuid = e.uuid))::text AS missing,
            (SELECT count(*) FROM "events_next" n WHERE NOT EXISTS
               (SELECT 1 FROM "events" e WHERE e.team_id = n.team_id AND e.uuid = n.uuid))::text AS extra`,
  );
  return { missing: Number(rows[0]!.missing), extra: Number(rows[0]!.extra) };
}

/**
 * Swaps the tables. Run it with ingestion stopped (nothing writes to events): a write that was
 * already waiting for the old table would land in the table being dropped. Checks that the two
 * tables hold the same rows first (under the lock) and refuses otherwise.
 */
export async function finishPartitionedEvents(pool: pg.Pool): Promise<void> {
  if ((await onlinePartitionState(pool)) !== 'prepared') throw new Error('run prepare and copy first');
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    await client.query('LOCK TABLE "events", "events_next" IN ACCESS EXCLUSIVE MODE');
    const { rows: pending } = await client.query<{ n: string }>(
      `SELECT count(*)::text AS n FROM teams t,
              LATERAL (SELECT min(timestamp) AS lo, max(timestamp) AS hi FROM events WHERE team_id = t.id) b,
              LATERAL generate_series(date_trunc('month', b.lo, 'UTC'), b.hi, interval '1 month') AS m(month)
        WHERE b.lo IS NOT NULL
          AND NOT EXISTS (SELECT 1 FROM "events_partitions"."online_copy_done" d WHERE d.team_id = t.id AND d.month = m.month)`,
    );
    if (Number(pending[0]!.n) > 0)
      throw new Error(`${pending[0]!.n} slices are not copied yet: run copy again`);
    const diff = await compareEventsOnline(client);
    if (diff.missing > 0 || diff.extra > 0)
      throw new Error(
        `events and events_next differ (${diff.missing} missing, ${diff.extra} extra): not swapped`,
      );
    const { after } = migrationParts();
    await client.query(`
      DROP TRIGGER "events_mirror_inserts" ON "events";
      DROP TRIGGER "events_mirror_deletes" ON "events";
      DROP FUNCTION "events_partitions"."mirror_inserts"();
      DROP FUNCTION "events_partitions"."mirror_deletes"();
      DROP TABLE "events_partitions"."online_copy_done";
      DROP TABLE "events";
      ALTER TABLE "events_next" RENAME TO "events";
      ALTER TABLE "events" RENAME CONSTRAINT "events_next_pkey" TO "events_pkey";
      ALTER INDEX "events_team_id_timestamp_uuid_idx_next" RENAME TO "events_team_id_timestamp_uuid_idx";
      ALTER INDEX "events_team_id_distinct_id_timestamp_idx_next" RENAME TO "events_team_id_distinct_id_timestamp_idx";
      ALTER INDEX "events_team_id_event_timestamp_idx_next" RENAME TO "events_team_id_event_timestamp_idx";
    `);
    await client.query(after);
    const checksum = createHash('sha256')
      .update(
        fs.readFileSync(path.join(repoRoot, 'prisma', 'migrations', PARTITION_MIGRATION, 'migration.sql')),
      )
      .digest('hex');
    await client.query(
      `INSERT INTO _prisma_migrations (id, checksum, finished_at, migration_name, logs, started_at, applied_steps_count)
       VALUES ($1, $2, now(), $3, 'applied online by scripts/partition-events-online.ts', now(), 1)`,
      [randomUUID(), checksum, PARTITION_MIGRATION],
    );
    await client.query('COMMIT');
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw error;
  } finally {
    client.release();
  }
}
