// The retention job: keeps the monthly events partitions ahead of time and deletes events past
// each project's data_retention_days (by the event's timestamp). Its cost follows the partitions
// and the rows it removes, never the size of the whole table (docs/data-lifecycle.md):
// - per partition, the projects present are found by a loose index scan (one index probe per
//   project), and each project's oldest and newest timestamp by two more probes;
// - a finished month whose every row is past its project's retention (or belongs to a deleted
//   project) is detached and dropped: constant cost, whatever its size;
// - otherwise each project's expired rows in that partition (and in the default partition) are
//   deleted in bounded batches through the partition's (team_id, timestamp) index.
import type pg from 'pg';
import type { JobHandler } from '../jobs/job-runner';
import {
  DEFAULT_PARTITION,
  PARTITION_SCHEMA,
  partitionMonth,
  partitionsAhead,
  retentionCutoff,
  addMonths,
  type MonthPartition,
} from './partition-plan';

export const RETENTION_JOB = 'retention';
export const JOB_HISTORY_DAYS = 90;
// Rows per DELETE: large enough that a million rows take few statements, small enough that one
// statement stays well inside the management statement timeout.
const BATCH = 50_000;

const q = (name: string) => `"${PARTITION_SCHEMA}"."${name.replace(/"/g, '""')}"`;

interface TeamRetention {
  days: number | null;
  deleted: boolean;
}

/** Creates a missing monthly partition, first moving the default partition's rows of its range. */
export async function ensurePartition(pool: pg.Pool, p: MonthPartition): Promise<boolean> {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    await client.query(`SET LOCAL lock_timeout = '5s'`);
    // Creating a partition checks the default partition for rows of its range: a scan of the
    // default partition, once a month (docs/data-lifecycle.md), longer than a request may take.
    await client.query(`SET LOCAL statement_timeout = '15min'`);
    const exists = await client.query(
      `SELECT 1 FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
                                        WHERE n.nspname = $1 AND c.relname = $2`,
      [PARTITION_SCHEMA, p.name],
    );
    if (exists.rowCount) {
      await client.query('ROLLBACK');
      return false;
    }
    // Rows of this range sitting in the default partition (a v4 uuid whose random prefix falls
    // here) would make the CREATE fail: park them, create, and route them back in.
    await client.query(`CREATE TEMP TABLE retention_moving (LIKE events) ON COMMIT DROP`);
    await client.query(
      `WITH moved AS (DELETE FROM ${q(DEFAULT_PARTITION)} WHERE uuid >= $1 AND uuid < $2 RETURNING *)
       INSERT INTO retention_moving SELECT * FROM moved`,
      [p.fromUuid, p.toUuid],
    );
    await client.query(
      `CREATE TABLE ${q(p.name)} PARTITION OF events FOR VALUES FROM ('${p.fromUuid}') TO ('${p.toUuid}')`,
    );
    // Into the partition itself, not through events: the rows never left the project's hourly
    // counts (event_counts_hourly), so they must not be counted again by events' insert trigger.
    await client.query(`INSERT INTO ${q(p.name)} SELECT * FROM retention_moving`);
    await client.query('COMMIT');
    return true;
  } catch (err) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw err;
  } finally {
    client.release();
  }
}

interface PartitionInfo {
  name: string;
  month: Date | null;
}

export async function listPartitions(pool: pg.Pool): Promise<PartitionInfo[]> {
  const { rows } = await pool.query<{ name: string }>(
    `SELECT c.relname AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
      WHERE i.inhparent = 'public.events'::regclass ORDER BY c.relname`,
  );
  return rows.map((r) => ({ name: r.name, month: partitionMonth(r.name) }));
}

interface TeamSpan {
  teamId: number;
  min: Date;
  max: Date;
}

/** The projects in a partition with their oldest and newest timestamp: index probes only. */
async function teamSpans(db: Pick<pg.Pool, 'query'>, partition: string): Promise<TeamSpan[]> {
  const { rows } = await db.query<{ team_id: number; min: Date; max: Date }>(
    `WITH RECURSIVE t AS (
       (SELECT team_id FROM ${q(partition)} ORDER BY team_id LIMIT 1)
       UNION ALL
       SELECT (SELECT e.team_id FROM ${q(partition)} e WHERE e.team_id > t.team_id ORDER BY e.team_id LIMIT 1)
         FROM t WHERE t.team_id IS NOT NULL)
     SELECT t.team_id,
            (SELECT min(timestamp) FROM ${q(partition)} e WHERE e.team_id = t.team_id) AS min,
            (SELECT max(timestamp) FROM ${q(partition)} e WHERE e.team_id = t.team_id) AS max
       FROM t WHERE t.team_id IS NOT NULL`,
  );
  return rows.map((r) => ({ teamId: r.team_id, min: r.min, max: r.max }));
}

async function loadTeams(db: Pick<pg.Pool, 'query'>): Promise<Map<number, TeamRetention>> {
  const { rows } = await db.query<{ id: number; data_retention_days: number | null; deleted: boolean }>(
    `SELECT id, data_retention_days, deleted_at IS NOT NULL AS deleted FROM teams`,
  );
  return new Map(rows.map((t) => [t.id, { days: t.data_retention_days, deleted: t.deleted }]));
}

/** True when every row of the partition is past retention or belongs to a deleted project. */
function allExpired(spans: TeamSpan[], teams: Map<number, TeamRetention>, now: Date): boolean {
  return spans.every((s) => {
    const t = teams.get(s.teamId);
    if (!t || t.deleted) return true;
    return t.days !== null && s.max < retentionCutoff(now, t.days);
  });
}

export interface RetentionProgress {
  partitions_created: string[];
  partitions_dropped: string[];
  rows_deleted: number;
  [key: string]: unknown;
}

export async function runRetention(
  pool: pg.Pool,
  opts: { now?: Date; monthsAhead?: number; step?: (p: RetentionProgress) => Promise<void> } = {},
): Promise<RetentionProgress> {
  const now = opts.now ?? new Date();
  const step = opts.step ?? (async () => undefined);
  const progress: RetentionProgress = { partitions_created: [], partitions_dropped: [], rows_deleted: 0 };

  for (const p of partitionsAhead(now, opts.monthsAhead ?? 3))
    if (await ensurePartition(pool, p)) progress.partitions_created.push(p.name);
  await step(progress);

  const { rows: teamRows } = await pool.query<{
    id: number;
    data_retention_days: number | null;
    deleted: boolean;
  }>(`SELECT id, data_retention_days, deleted_at IS NOT NULL AS deleted FROM teams`);
  const teams = new Map(teamRows.map((t) => [t.id, { days: t.data_retention_days, deleted: t.deleted }]));

  for (const part of await listPartitions(pool)) {
    const spans = await teamSpans(pool, part.name);
    if (spans.length === 0) continue;
    const finished = part.month !== null && addMonths(part.month, 1) <= now;
    if (finished && allExpired(spans, teams, now) && (await dropIfExpired(pool, part.name, now))) {
      progress.partitions_dropped.push(part.name);
      await step(progress);
      continue;
    }
    for (const s of spans) {
      const t = teams.get(s.teamId);
      // Deleted projects are the purge job's; projects without retention keep everything.
      if (!t || t.deleted || t.days === null) continue;
      const cutoff = retentionCutoff(now, t.days);
      if (s.min >= cutoff) continue;
      for (;;) {
        // Found in the partition, deleted through events, whose delete trigger takes them out of
        // the project's hourly counts (event_counts_hourly) in the same statement.
        const r = await pool.query(
          `DELETE FROM events WHERE (team_id, uuid) IN (
             SELECT team_id, uuid FROM ${q(part.name)} WHERE team_id = $1 AND timestamp < $2 LIMIT ${BATCH})`,
          [s.teamId, cutoff],
        );
        progress.rows_deleted += r.rowCount ?? 0;
        await step(progress);
        if ((r.rowCount ?? 0) < BATCH) break;
      }
    }
  }
  // The job table's own history: finished jobs are kept 90 days, then go.
  const pruned = await pool.query(
    `DELETE FROM background_jobs WHERE state IN ('succeeded', 'failed') AND finished_at < $1`,
    [new Date(now.getTime() - JOB_HISTORY_DAYS * 86_400_000)],
  );
  progress.jobs_pruned = pruned.rowCount ?? 0;
  return progress;
}

/**
 * Takes `gone` (rows of `keys` and their number `n`) out of a counts table, locking its rows in key
 * order as the triggers on events lock them, and deletes the rows left at zero.
 */
async function subtractCounts(client: pg.PoolClient, table: string, keys: string[], gone: string) {
  const cols = (alias: string) => `(${keys.map((k) => `${alias}.${k}`).join(', ')})`;
  await client.query(
    `WITH gone AS (${gone}),
     locked AS (SELECT ${keys.map((k) => `c.${k}`).join(', ')} FROM ${table} c JOIN gone USING (${keys.join(', ')})
                 ORDER BY ${keys.map((_, i) => i + 1).join(', ')} FOR UPDATE OF c)
     UPDATE ${table} c SET count = c.count - gone.n FROM gone, locked l
      WHERE ${cols('c')} = ${cols('gone')} AND ${cols('l')} = ${cols('c')}`,
  );
  await client.query(`DELETE FROM ${table} WHERE count <= 0`);
}

/**
 * Detaches and drops a partition after checking again under the detach's lock (no row can
 * arrive meanwhile). lock_timeout keeps a long reader from queueing every query behind the
 * detach; the next run tries again.
 */
async function dropIfExpired(pool: pg.Pool, name: string, now: Date): Promise<boolean> {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    await client.query(`SET LOCAL lock_timeout = '3s'`);
    await client.query(`ALTER TABLE events DETACH PARTITION ${q(name)}`);
    // Projects read again, under the lock: one created since the run began is not "gone".
    if (!allExpired(await teamSpans(client, name), await loadTeams(client), now)) {
      await client.query('ROLLBACK');
      return false;
    }
    // A detached partition's rows leave events without its delete trigger: the hourly counts
    // lose them here, in the same transaction.
    const partition = q(name);
    await subtractCounts(
      client,
      'event_counts_hourly',
      ['team_id', 'event', 'hour'],
      `SELECT team_id, event, date_trunc('hour', timestamp, 'UTC') AS hour, count(*) AS n
         FROM ${partition} GROUP BY 1, 2, 3`,
    );
    await subtractCounts(
      client,
      'event_property_counts_hourly',
      ['team_id', 'event', 'property', 'hour', 'overlong', 'value'],
      `SELECT p.team_id, p.event, v.property, date_trunc('hour', p.timestamp, 'UTC') AS hour, v.overlong,
              v.value, count(*) AS n
         FROM ${partition} p CROSS JOIN LATERAL event_counted_values(p.properties) v
        GROUP BY 1, 2, 3, 4, 5, 6`,
    );
    await client.query(`DROP TABLE ${q(name)}`);
    await client.query('COMMIT');
    return true;
  } catch (err) {
    await client.query('ROLLBACK').catch(() => undefined);
    if ((err as { code?: string }).code === '55P03') return false; // lock_timeout: next run
    throw err;
  } finally {
    client.release();
  }
}

export function retentionJob(opts: { monthsAhead?: number } = {}): JobHandler {
  return async (_job, ctx) => {
    const progress = await runRetention(ctx.pool, {
      monthsAhead: opts.monthsAhead,
      step: (p) => ctx.step(p),
    });
    return { kind: 'done', progress };
  };
}
