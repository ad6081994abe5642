// Retention over the partitioned events table, on a fresh database: per project (a project
// without retention keeps everything, a deleted project's rows do not hold a partition back),
// whole finished months dropped only when every row in them is expired, row deletes inside a
// partition otherwise (a v4 uuid whose random prefix falls in a month's range), the default
// partition cleaned by timestamp, and partitions created ahead with the default partition's
// rows of their range moved in.
import { randomUUID } from 'node:crypto';
import { createPgPool } from '@sett/db';
import { createTestDatabase, hourlyCountsDrift, propertyCountsDrift, type TestDatabase } from '@sett/testing';
import type pg from 'pg';
import { addMonths, monthPartition, monthStart, uuidv7At } from '../src/retention/partition-plan';
import { listPartitions, runRetention } from '../src/retention/retention-job';

let db: TestDatabase;
let pool: pg.Pool;

beforeAll(async () => {
  db = await createTestDatabase();
  pool = createPgPool({ databaseUrl: db.url, max: 4 });
});

afterAll(async () => {
  await pool?.end();
  await db?.drop();
});

async function team(retentionDays: number | null, deleted = false): Promise<number> {
  const org = randomUUID();
  await pool.query(`INSERT INTO organizations (id, name, slug) VALUES ($1, 'o', $2)`, [org, org]);
  const { rows } = await pool.query<{ id: number }>(
    `INSERT INTO teams (uuid, organization_id, api_token, name, data_retention_days, deleted_at)
     VALUES ($1, $2, $3, 't', $4, $5) RETURNING id`,
    [randomUUID(), org, `phc_${randomUUID()}`, retentionDays, deleted ? new Date() : null],
  );
  return rows[0]!.id;
}

async function insert(teamId: number, uuid: string, timestamp: Date, tag: string) {
  await pool.query(
    `INSERT INTO events (uuid, team_id, event, distinct_id, timestamp, properties)
     VALUES ($1, $2, $3, 'd', $4, jsonb_build_object('$browser', $3::text))`,
    [uuid, teamId, tag, timestamp],
  );
}

/** A v4 uuid whose first 48 bits fall inside the range of the given month's partition. */
function v4InMonth(month: Date): string {
  const p = monthPartition(month);
  const mid = Math.floor((p.from.getTime() + p.to.getTime()) / 2);
  const hex = mid.toString(16).padStart(12, '0');
  const r = randomUUID();
  return `${hex.slice(0, 8)}-${hex.slice(8)}-4${r.slice(15, 18)}-${r.slice(19)}`;
}

async function tags(): Promise<string[]> {
  const { rows } = await pool.query<{ event: string }>(`SELECT event FROM events ORDER BY event`);
  return rows.map((r) => r.event);
}

async function partitionOf(tag: string): Promise<string> {
  const { rows } = await pool.query<{ p: string }>(
    `SELECT tableoid::regclass::text AS p FROM events WHERE event = $1`,
    [tag],
  );
  return rows[0]!.p;
}

it('drops what is past each project retention, and only that', async () => {
  const now = new Date();
  const day = 86_400_000;
  const thisMonth = monthStart(now);
  const m6 = addMonths(thisMonth, -6); // finished long ago
  const m5 = addMonths(thisMonth, -5);
  const m4 = addMonths(thisMonth, -4);
  const at = (month: Date, days = 10) => new Date(month.getTime() + days * day);

  const short = await team(30); // keeps 30 days
  const forever = await team(null);
  const long = await team(400);
  const gone = await team(30, true); // soft-deleted: its rows never hold a drop back

  // Month -6: only expired rows (short, and the deleted project): the partition is dropped.
  await insert(short, uuidv7At(at(m6).getTime()), at(m6), 'm6-short');
  await insert(gone, uuidv7At(at(m6, 11).getTime()), at(m6, 11), 'm6-gone');
  // Month -5: a project without retention is there too: rows are deleted, the partition stays.
  await insert(short, uuidv7At(at(m5).getTime()), at(m5), 'm5-short');
  await insert(forever, uuidv7At(at(m5).getTime()), at(m5), 'm5-forever');
  await insert(long, uuidv7At(at(m5).getTime()), at(m5), 'm5-long');
  // Month -4: an expired row, and a v4 uuid whose random prefix lands in this month's range but
  // whose event is recent: the month cannot be dropped as a whole.
  await insert(short, uuidv7At(at(m4).getTime()), at(m4), 'm4-short-old');
  await insert(short, v4InMonth(m4), new Date(now.getTime() - day), 'm4-short-v4-recent');
  // This month: recent rows stay; a v7 uuid of today for an event dated long ago (historical
  // import) goes, retention follows the timestamp.
  await insert(short, uuidv7At(now.getTime() - day), new Date(now.getTime() - day), 'now-short');
  await insert(
    short,
    uuidv7At(now.getTime() - 1000),
    new Date(now.getTime() - 90 * day),
    'now-short-imported-old',
  );
  // The default partition (v4 uuids of no particular month): cleaned by timestamp, per project.
  const v4 = () => `${'00000000'}-0000-4${randomUUID().slice(15)}`;
  await insert(short, v4(), new Date(now.getTime() - 31 * day), 'default-short-old');
  await insert(short, v4(), new Date(now.getTime() - 29 * day), 'default-short-recent');
  await insert(forever, v4(), new Date(now.getTime() - 3000 * day), 'default-forever-old');

  expect(await partitionOf('m6-short')).toBe(`events_partitions.${monthPartition(m6).name}`);
  expect(await partitionOf('m4-short-v4-recent')).toBe(`events_partitions.${monthPartition(m4).name}`);
  expect(await partitionOf('default-short-old')).toBe('events_partitions.events_default');

  const progress = await runRetention(pool, { now });

  expect(progress.partitions_dropped).toEqual([monthPartition(m6).name]);
  const names = (await listPartitions(pool)).map((p) => p.name);
  expect(names).not.toContain(monthPartition(m6).name);
  expect(names).toContain(monthPartition(m5).name);
  expect(names).toContain(monthPartition(m4).name);
  expect(await tags()).toEqual(
    [
      'm5-forever',
      'm5-long',
      'm4-short-v4-recent',
      'now-short',
      'default-short-recent',
      'default-forever-old',
    ].sort(),
  );
  // m5-short, m4-short-old, now-short-imported-old, default-short-old: deleted row by row.
  expect(progress.rows_deleted).toBe(4);
  // The hourly counts lost what the dropped partition and the deletes removed, and only that.
  expect(await hourlyCountsDrift(pool)).toEqual([]);
  expect(await propertyCountsDrift(pool)).toEqual([]);
  expect(
    (await pool.query(`SELECT count(*)::int AS n FROM event_counts_hourly WHERE team_id = $1`, [short]))
      .rows[0].n,
  ).toBe(3); // now-short, m4-short-v4-recent, default-short-recent

  // A second run finds nothing more to do.
  const again = await runRetention(pool, { now });
  expect(again).toMatchObject({ partitions_dropped: [], rows_deleted: 0 });

  // Idempotency still holds on (team_id, uuid) across the partitioned table.
  const dup = await pool.query(
    `INSERT INTO events (uuid, team_id, event, distinct_id, timestamp)
     SELECT uuid, team_id, event, distinct_id, timestamp FROM events WHERE event = 'now-short'
     ON CONFLICT (team_id, uuid) DO NOTHING`,
  );
  expect(dup.rowCount).toBe(0);
});

it('prunes finished jobs older than 90 days, and only those', async () => {
  const job = async (state: string, finishedDaysAgo: number | null) =>
    (
      await pool.query<{ id: string }>(
        `INSERT INTO background_jobs (kind, state, finished_at) VALUES ('x', $1, now() - $2 * interval '1 day') RETURNING id`,
        [state, finishedDaysAgo],
      )
    ).rows[0]!.id;
  const old = await job('succeeded', 91);
  const oldFailed = await job('failed', 120);
  const recent = await job('succeeded', 89);
  const queued = await job('queued', null);
  const progress = await runRetention(pool);
  expect(progress.jobs_pruned).toBe(2);
  const { rows } = await pool.query<{ id: string }>(
    `SELECT id FROM background_jobs WHERE id = ANY($1) ORDER BY id`,
    [[old, oldFailed, recent, queued]],
  );
  expect(rows.map((r) => r.id)).toEqual([recent, queued]);
});

it('creates partitions ahead and moves the default partition rows of their range into them', async () => {
  const now = new Date();
  const t = await team(null);
  const far = addMonths(monthStart(now), 8); // beyond what the migration created
  const p = monthPartition(far);
  await insert(t, v4InMonth(far), now, 'v4-far-future-prefix');
  expect(await partitionOf('v4-far-future-prefix')).toBe('events_partitions.events_default');

  const progress = await runRetention(pool, { now, monthsAhead: 9 });
  expect(progress.partitions_created).toContain(p.name);
  expect(await partitionOf('v4-far-future-prefix')).toBe(`events_partitions.${p.name}`);
  // Moved into its partition without being counted twice.
  expect(await hourlyCountsDrift(pool)).toEqual([]);
  expect(await propertyCountsDrift(pool)).toEqual([]);
  // A v7 event of that month now lands in its partition.
  await insert(t, uuidv7At(far.getTime() + 1000), now, 'v7-far');
  expect(await partitionOf('v7-far')).toBe(`events_partitions.${p.name}`);
});
