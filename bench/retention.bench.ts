// `pnpm bench retention`: purging one month out of 10,000,000 events (BENCH_RETENTION_ROWS to
// change) with the retention job (services/management/src/retention) on the partitioned events
// table, against the plain DELETE over an unpartitioned copy of the same rows, in one scratch
// database, same run. Ten months of events, a million per month, UUIDv7 uuids (as capture
// assigns them), generated with SQL generate_series; both tables carry the same indexes.
//   A. A month holding only the bench project's rows falls out of its retention: the job drops
//      the partition (constant cost). Baseline: DELETE ... WHERE team_id AND timestamp < cutoff.
//   B. The next month also holds 1 % of rows of a project that keeps everything: the partition
//      stays and the job deletes the bench project's rows inside it (bounded by the partition).
//      Baseline: the same DELETE on the unpartitioned copy.
// Each case checks that both sides removed the same number of rows.
import { createPgPool } from '@sett/db';
import type { Pool } from 'pg';
import { addMonths, monthPartition, monthStart } from '../services/management/src/retention/partition-plan';
import { runRetention } from '../services/management/src/retention/retention-job';
import { fmt, insertBenchProject, ratioLine, scratchDatabase } from './lib';

const DAY = 86_400_000;
const MONTHS = 10;

async function timed<T>(fn: () => Promise<T>): Promise<{ ms: number; value: T }> {
  const t0 = process.hrtime.bigint();
  const value = await fn();
  return { ms: Number(process.hrtime.bigint() - t0) / 1e6, value };
}

/** One month of rows: UUIDv7 from each row's timestamp, from day 2 of the month to its end. */
async function generateMonth(
  pool: Pool,
  month: Date,
  rows: number,
  benchTeam: number,
  keeper: number | null,
) {
  const from = month.getTime() + DAY;
  const span = addMonths(month, 1).getTime() - from - 1;
  await pool.query(
    `INSERT INTO events (uuid, team_id, event, distinct_id, properties, timestamp, created_at)
     SELECT (lpad(to_hex(ms), 12, '0') || '7' || substr(h, 1, 3) || '8' || substr(h, 4, 15))::uuid,
            CASE WHEN $5::int IS NOT NULL AND i % 100 = 0 THEN $5::int ELSE $4::int END,
            'event ' || (i % 20), 'user-' || (i % 100000), '{"$current_url": "/page"}'::jsonb,
            to_timestamp(ms / 1000.0), to_timestamp(ms / 1000.0)
       FROM generate_series(1, $3::int) AS i,
            LATERAL (SELECT ($1::bigint + (i::bigint * $2::bigint) / $3::int) AS ms, md5(i::text || $1::text) AS h) x`,
    [from, span, rows, benchTeam, keeper],
  );
}

export async function run(): Promise<boolean> {
  const serverUrl = process.env.DATABASE_URL || 'postgresql://root@127.0.0.1:5432/sett';
  const total = Number(process.env.BENCH_RETENTION_ROWS || 10_000_000);
  const perMonth = Math.floor(total / MONTHS);
  const db = await scratchDatabase(serverUrl, `sett_bench_retention_${process.pid}`);
  const pool = createPgPool({ databaseUrl: db.url, max: 2 });
  let ok = true;
  try {
    const bench = (await insertBenchProject(pool)).teamId;
    const keeper = (await insertBenchProject(pool)).teamId;
    const now = new Date();
    const months = Array.from({ length: MONTHS }, (_, i) => addMonths(monthStart(now), i - MONTHS));

    // Loading is faster without indexes: drop them, load, build them again (same definitions).
    const t0 = Date.now();
    await pool.query(`ALTER TABLE events DROP CONSTRAINT events_pkey`);
    await pool.query(
      `DROP INDEX events_team_id_timestamp_uuid_idx, events_team_id_distinct_id_timestamp_idx, events_team_id_event_timestamp_idx`,
    );
    for (const [i, m] of months.entries())
      await generateMonth(pool, m, perMonth, bench, i === 0 ? null : keeper);
    const indexes = [
      `ALTER TABLE %T ADD CONSTRAINT %T_pkey PRIMARY KEY (team_id, uuid)`,
      `CREATE INDEX %T_team_id_timestamp_uuid_idx ON %T (team_id, timestamp DESC, uuid DESC)`,
      `CREATE INDEX %T_team_id_distinct_id_timestamp_idx ON %T (team_id, distinct_id, timestamp DESC)`,
      `CREATE INDEX %T_team_id_event_timestamp_idx ON %T (team_id, event, timestamp DESC)`,
    ];
    for (const sql of indexes) await pool.query(sql.replace(/%T/g, 'events'));
    await pool.query(`CREATE TABLE events_flat (LIKE events INCLUDING DEFAULTS)`);
    await pool.query(`INSERT INTO events_flat SELECT * FROM events`);
    for (const sql of indexes) await pool.query(sql.replace(/%T/g, 'events_flat'));
    await pool.query(`VACUUM ANALYZE events`);
    await pool.query(`VACUUM ANALYZE events_flat`);
    const count = Number((await pool.query(`SELECT count(*) AS n FROM events_flat`)).rows[0].n);
    process.stdout.write(
      `loaded ${fmt(count)} events in ${MONTHS} months, twice, in ${((Date.now() - t0) / 1000).toFixed(0)} s\n`,
    );

    const flatDelete = (cutoff: Date) =>
      pool.query(`DELETE FROM events_flat WHERE team_id = $1 AND timestamp < $2`, [bench, cutoff]);
    const countBench = async (table: string) =>
      Number((await pool.query(`SELECT count(*) AS n FROM ${table} WHERE team_id = $1`, [bench])).rows[0].n);

    const cases = [
      { name: 'A: a month of one project (partition dropped)', expires: months[0]! },
      {
        name: 'B: a month shared with a project that keeps everything (rows deleted in the partition)',
        expires: months[1]!,
      },
    ];
    for (const c of cases) {
      // Retention that puts the whole of `expires` (days 2..end) past the cutoff, and the next month not.
      const days = Math.floor((now.getTime() - addMonths(c.expires, 1).getTime()) / DAY);
      await pool.query(`UPDATE teams SET data_retention_days = $1 WHERE id = $2`, [days, bench]);
      const before = await countBench('events');
      const job = await timed(() => runRetention(pool, { now }));
      const removed = before - (await countBench('events'));
      // Deleted rows stay on disk until VACUUM; a dropped partition is gone. Both sides' VACUUM
      // (of the tables the purge touched) is timed too.
      const touched =
        job.value.rows_deleted > 0 ? [`events_partitions.${monthPartition(c.expires).name}`] : [];
      const jobVacuum = await timed(async () => {
        for (const t of touched) await pool.query(`VACUUM ${t}`);
      });
      const flatBefore = await countBench('events_flat');
      const base = await timed(() => flatDelete(new Date(now.getTime() - days * DAY)));
      const flatRemoved = flatBefore - (await countBench('events_flat'));
      const baseVacuum = await timed(() => pool.query(`VACUUM events_flat`));
      process.stdout.write(
        `${c.name}\n  job: ${fmt(job.ms)} ms (+ VACUUM ${fmt(jobVacuum.ms)} ms), removed ${removed.toLocaleString('en-US')} rows (dropped ${JSON.stringify(job.value.partitions_dropped)}, deleted ${job.value.rows_deleted.toLocaleString('en-US')} rows)\n` +
          `  baseline DELETE on the unpartitioned copy: ${fmt(base.ms)} ms (+ VACUUM ${fmt(baseVacuum.ms)} ms), removed ${flatRemoved.toLocaleString('en-US')} rows\n` +
          `  ${ratioLine('purge time', job.ms, base.ms, 'ms')}\n` +
          `  ${ratioLine('purge and VACUUM', job.ms + jobVacuum.ms, base.ms + baseVacuum.ms, 'ms')}\n`,
      );
      if (removed !== flatRemoved || removed === 0) {
        process.stdout.write(`  MISMATCH: the job removed ${removed} rows, the baseline ${flatRemoved}\n`);
        ok = false;
      }
    }
  } finally {
    await pool.end();
    await db.drop();
  }
  return ok;
}
