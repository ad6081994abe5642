// `pnpm bench query`: the query API (POST /api/projects/:id/query/, a management process) on a
// synthetic project, against a hand-written SQL baseline over the same raw events table and
// indexes, timed in the same run. The project: 30 days, 50 event names with a skewed mix, 100,000
// persons with skewed activity (one in ten merged from a second, anonymous id), 1M events by
// default (QUERY_BENCH_EVENTS=10000000 for 10M), loaded once per size and kept (database
// sett_bench_query_<events>; QUERY_BENCH_RELOAD=1 reloads; indexes are built after the rows).
// Timed (p50 and p95 of 5 after a warm-up), each query kind: trends total, dau, weekly active, a
// $browser breakdown and a sum over 30 days; a 3-step funnel; weekly retention; the events table;
// two HogQL queries (events by name over 7 days, unique persons per day over 30).
// The baseline reads the raw events table with its indexes (never the hourly counts), so where
// the engine reads the counts (trends total) the ratio is what they buy.
// Target: each API query >= 0.8 of its raw-SQL baseline.
import pg from 'pg';
import {
  endPool,
  ensureDatabase,
  migrateDeploy,
  quoteIdent,
  withDatabase,
  withMaintenanceClient,
} from '@sett/db';
import { benchOwnerKey, fmt, freePort, startChild } from './lib';

const SERVER_URL = process.env.DATABASE_URL || 'postgresql://root@127.0.0.1:5432/postgres';
const EVENTS = Number(process.env.QUERY_BENCH_EVENTS || 1_000_000);
const PERSONS = 100_000;
const RUNS = 5;

async function load(url: string): Promise<{ teamId: number; key: string }> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const existing = await client.query<{ id: number; n: string; priced: boolean; merged: boolean }>(
      `SELECT t.id, (SELECT count(*) FROM events e WHERE e.team_id = t.id) AS n,
              EXISTS (SELECT 1 FROM events e WHERE e.team_id = t.id AND e.properties ? 'price') AS priced,
              EXISTS (SELECT 1 FROM person_distinct_ids d WHERE d.team_id = t.id AND d.distinct_id LIKE 'a%') AS merged
         FROM teams t WHERE t.name = 'Query bench'`,
    );
    let teamId = existing.rows[0]?.id;
    // Reloaded when the size differs, or the data predates a property the cases read.
    if (
      teamId === undefined ||
      Number(existing.rows[0]!.n) !== EVENTS ||
      !existing.rows[0]!.priced ||
      !existing.rows[0]!.merged ||
      process.env.QUERY_BENCH_RELOAD
    ) {
      await client.query(
        'TRUNCATE events, event_counts_hourly, event_property_counts_hourly, person_distinct_ids, persons, teams, organizations CASCADE',
      );
      const org = (
        await client.query<{ id: string }>(
          `INSERT INTO organizations (id, name, slug) VALUES (gen_random_uuid(), 'Bench', 'bench-query') RETURNING id`,
        )
      ).rows[0]!.id;
      teamId = (
        await client.query<{ id: number }>(
          `INSERT INTO teams (uuid, organization_id, name, api_token) VALUES (gen_random_uuid(), $1, 'Query bench', 'phc_query_bench') RETURNING id`,
          [org],
        )
      ).rows[0]!.id;
      const t0 = Date.now();
      await client.query(
        `INSERT INTO persons (uuid, team_id) SELECT gen_random_uuid(), $1 FROM generate_series(1, ${PERSONS})`,
        [teamId],
      );
      // Every person has the id u<n>; one in ten was merged from an anonymous id a<n>, whose
      // events count as the same person.
      await client.query(
        `INSERT INTO person_distinct_ids (team_id, distinct_id, person_id)
         SELECT $1, prefix || n, id
           FROM (SELECT id, row_number() OVER (ORDER BY id) AS n FROM persons WHERE team_id = $1) p,
                LATERAL (VALUES ('u'), ('a')) AS v(prefix)
          WHERE prefix = 'u' OR n <= ${PERSONS / 10}`,
        [teamId],
      );
      // The load: rows generated in the database (nothing crosses the socket, which is what COPY
      // would save), with the secondary indexes dropped and the hourly counts' trigger off, then
      // the indexes built and the counts computed once over the loaded rows.
      const indexes = (
        await client.query<{ name: string; def: string }>(
          `SELECT indexname AS name, indexdef AS def FROM pg_indexes
            WHERE schemaname = 'public' AND tablename = 'events' AND indexname <> 'events_pkey'`,
        )
      ).rows;
      for (const i of indexes) await client.query(`DROP INDEX ${quoteIdent(i.name)}`);
      await client.query('ALTER TABLE events DISABLE TRIGGER events_counts_add');
      // Skew: event names and persons drawn by a power of a uniform number (a few dominate).
      await client.query(
        `INSERT INTO events (uuid, team_id, event, distinct_id, timestamp, properties)
         SELECT gen_random_uuid(), $1,
                'event_' || floor(power(random(), 3) * 50)::int,
                CASE WHEN n <= ${PERSONS / 10} AND random() < 0.3 THEN 'a' ELSE 'u' END || n,
                now() - random() * interval '30 days',
                jsonb_build_object('$browser', (ARRAY['Chrome','Safari','Firefox','Edge'])[1 + floor(power(random(), 2) * 4)::int],
                                   'plan', CASE WHEN random() < 0.2 THEN 'pro' ELSE 'free' END,
                                   'price', floor(random() * 100)::int)
         FROM (SELECT 1 + floor(power(random(), 2) * ${PERSONS})::int AS n FROM generate_series(1, ${EVENTS})) g`,
        [teamId],
      );
      const loaded = Date.now();
      // A partitioned index is listed as ON ONLY the parent; built here on every partition too.
      for (const i of indexes) await client.query(i.def.replace(' ON ONLY ', ' ON '));
      await client.query('ALTER TABLE events ENABLE TRIGGER events_counts_add');
      await client.query(
        `INSERT INTO event_counts_hourly (team_id, event, hour, count)
         SELECT team_id, event, date_trunc('hour', timestamp, 'UTC'), count(*) FROM events GROUP BY 1, 2, 3`,
      );
      await client.query(
        `INSERT INTO event_property_counts_hourly (team_id, event, property, hour, overlong, value, count)
         SELECT e.team_id, e.event, v.property, date_trunc('hour', e.timestamp, 'UTC'), v.overlong, v.value, count(*)
           FROM events e CROSS JOIN LATERAL event_counted_values(e.properties) v
          GROUP BY 1, 2, 3, 4, 5, 6`,
      );
      await client.query('ANALYZE');
      process.stdout.write(
        `loaded ${fmt(EVENTS)} events, ${fmt(PERSONS)} persons in ${fmt(Date.now() - t0)} ms ` +
          `(rows ${fmt(loaded - t0)} ms, then indexes, hourly counts and ANALYZE ${fmt(Date.now() - loaded)} ms)\n`,
      );
    }
    const key = await benchOwnerKey(client, url, teamId, ['query:read']);
    return { teamId, key };
  } finally {
    await client.end();
  }
}

/** p50 and p95 (of 5 runs, the slowest) after a warm-up. */
async function timed(fn: () => Promise<void>): Promise<{ p50: number; p95: number }> {
  await fn();
  const times: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    const t0 = process.hrtime.bigint();
    await fn();
    times.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  times.sort((a, b) => a - b);
  const at = (q: number) => times[Math.min(times.length - 1, Math.ceil(q * times.length) - 1)]!;
  return { p50: at(0.5), p95: at(0.95) };
}

export async function run(): Promise<boolean> {
  const url = withDatabase(SERVER_URL, `sett_bench_query_${EVENTS}`);
  await ensureDatabase(url);
  await migrateDeploy({ databaseUrl: url });
  const { teamId, key } = await load(url);
  const port = await freePort();
  const service = await startChild(
    'services/management/src/main.ts',
    {
      DATABASE_URL: url,
      MANAGEMENT_PORT: String(port),
      HOST: '127.0.0.1',
      LOG_LEVEL: 'info',
      MANAGEMENT_RATE_LIMIT_PER_MINUTE: '1000000',
      MANAGEMENT_USER_RATE_LIMIT_PER_MINUTE: '1000000',
      // At 10M events the slowest kinds take longer than an interactive deadline.
      QUERY_TIMEOUT_MS: '600000',
      MANAGEMENT_DATABASE_TIMEOUT_MS: '600000',
    },
    /management ready/,
  );
  const pool = new pg.Pool({ connectionString: url, max: 2 });
  try {
    const api = async (query: object) => {
      const res = await fetch(`http://127.0.0.1:${port}/api/projects/${teamId}/query/`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        // Computed every time: the bench times queries, not the result cache.
        body: JSON.stringify({ query, refresh: 'force_blocking' }),
      });
      if (res.status !== 200) throw new Error(`query answered ${res.status}: ${await res.text()}`);
      await res.arrayBuffer();
    };
    const sql = (text: string) => async () => void (await pool.query(text, [teamId]));
    const range = `team_id = $1 AND timestamp >= date_trunc('day', now() - interval '30 days') AND timestamp <= now()`;
    const personOf = `coalesce(p.uuid::text, 'd:' || e.distinct_id)`;
    const joined = `events e LEFT JOIN person_distinct_ids d ON d.team_id = e.team_id AND d.distinct_id = e.distinct_id
           LEFT JOIN persons p ON p.id = d.person_id`;
    const erange = `e.team_id = $1 AND e.timestamp >= date_trunc('day', now() - interval '30 days') AND e.timestamp <= now()`;
    const cases: Array<[string, object, string]> = [
      [
        'trends total, 30 days, one event',
        {
          kind: 'TrendsQuery',
          series: [{ kind: 'EventsNode', event: 'event_0' }],
          dateRange: { date_from: '-30d' },
        },
        `SELECT date_trunc('day', timestamp AT TIME ZONE 'UTC'), count(*) FROM events WHERE ${range} AND event = 'event_0' GROUP BY 1`,
      ],
      [
        'trends total, 30 days, all events',
        {
          kind: 'TrendsQuery',
          series: [{ kind: 'EventsNode', event: null }],
          dateRange: { date_from: '-30d' },
        },
        `SELECT date_trunc('day', timestamp AT TIME ZONE 'UTC'), count(*) FROM events WHERE ${range} GROUP BY 1`,
      ],
      [
        'trends dau, 30 days, one event',
        {
          kind: 'TrendsQuery',
          series: [{ kind: 'EventsNode', event: 'event_0', math: 'dau' }],
          dateRange: { date_from: '-30d' },
        },
        `SELECT date_trunc('day', e.timestamp AT TIME ZONE 'UTC'), count(DISTINCT ${personOf})
           FROM ${joined} WHERE ${erange} AND e.event = 'event_0' GROUP BY 1`,
      ],
      [
        'trends weekly active, 30 days, one event',
        {
          kind: 'TrendsQuery',
          series: [{ kind: 'EventsNode', event: 'event_0', math: 'weekly_active' }],
          dateRange: { date_from: '-30d' },
        },
        // Each person's active days once, then each window counts the persons of its 7 days (the
        // rewrite a hand-written query would use; one scan per window takes minutes at 10M).
        `WITH active AS (
           SELECT DISTINCT date_trunc('day', e.timestamp AT TIME ZONE 'UTC') AS day, ${personOf} AS pk
             FROM ${joined} WHERE e.team_id = $1 AND e.event = 'event_0'
              AND e.timestamp >= date_trunc('day', now() - interval '36 days') AND e.timestamp <= now())
         SELECT w.day, count(DISTINCT a.pk)
           FROM generate_series(date_trunc('day', now() - interval '30 days'), now(), interval '1 day') AS w(day)
           JOIN active a ON a.day > w.day - interval '7 days' AND a.day <= w.day
          GROUP BY 1`,
      ],
      [
        'trends total by $browser, 30 days, one event',
        {
          kind: 'TrendsQuery',
          series: [{ kind: 'EventsNode', event: 'event_0' }],
          dateRange: { date_from: '-30d' },
          breakdownFilter: { breakdown: '$browser', breakdown_type: 'event' },
        },
        `SELECT date_trunc('day', timestamp AT TIME ZONE 'UTC'), properties->>'$browser', count(*) FROM events WHERE ${range} AND event = 'event_0' GROUP BY 1, 2`,
      ],
      [
        'trends dau by $browser, 30 days, one event',
        {
          kind: 'TrendsQuery',
          series: [{ kind: 'EventsNode', event: 'event_0', math: 'dau' }],
          dateRange: { date_from: '-30d' },
          breakdownFilter: { breakdown: '$browser', breakdown_type: 'event' },
        },
        `SELECT date_trunc('day', e.timestamp AT TIME ZONE 'UTC'), e.properties->>'$browser', count(DISTINCT ${personOf})
           FROM ${joined} WHERE ${erange} AND e.event = 'event_0' GROUP BY 1, 2`,
      ],
      [
        'trends sum of price, 30 days, one event',
        {
          kind: 'TrendsQuery',
          series: [{ kind: 'EventsNode', event: 'event_0', math: 'sum', math_property: 'price' }],
          dateRange: { date_from: '-30d' },
        },
        `SELECT date_trunc('day', timestamp AT TIME ZONE 'UTC'), sum((properties->>'price')::numeric) FROM events WHERE ${range} AND event = 'event_0' GROUP BY 1`,
      ],
      [
        'funnel of 3 steps, 30 days, 14-day window',
        {
          kind: 'FunnelsQuery',
          series: ['event_1', 'event_2', 'event_3'].map((event) => ({ kind: 'EventsNode', event })),
          dateRange: { date_from: '-30d' },
        },
        // Each person's first attempt only (a simpler funnel than the engine's): set-based.
        `WITH ev AS (SELECT ${personOf} AS pk, e.event, e.timestamp AS ts FROM ${joined}
                      WHERE ${erange} AND e.event IN ('event_1', 'event_2', 'event_3')),
              s0 AS (SELECT pk, min(ts) AS t0 FROM ev WHERE event = 'event_1' GROUP BY pk),
              s1 AS (SELECT s0.pk, s0.t0, min(ev.ts) AS t1 FROM s0 JOIN ev ON ev.pk = s0.pk AND ev.event = 'event_2'
                       AND ev.ts > s0.t0 AND ev.ts <= s0.t0 + interval '14 days' GROUP BY 1, 2),
              s2 AS (SELECT s1.pk FROM s1 JOIN ev ON ev.pk = s1.pk AND ev.event = 'event_3'
                       AND ev.ts > s1.t1 AND ev.ts <= s1.t0 + interval '14 days' GROUP BY 1)
         SELECT (SELECT count(*) FROM s0), (SELECT count(*) FROM s1), (SELECT count(*) FROM s2)`,
      ],
      [
        'retention weekly, recurring, 4 weeks',
        {
          kind: 'RetentionQuery',
          retentionFilter: {
            retentionType: 'retention_recurring',
            period: 'Week',
            totalIntervals: 4,
            targetEntity: { id: 'event_1', type: 'events' },
            returningEntity: { id: 'event_2', type: 'events' },
          },
        },
        `WITH t AS (SELECT DISTINCT ${personOf} AS pk, date_trunc('week', e.timestamp) AS w FROM ${joined}
                     WHERE ${erange} AND e.event = 'event_1'),
              r AS (SELECT DISTINCT ${personOf} AS pk, date_trunc('week', e.timestamp) AS w FROM ${joined}
                     WHERE ${erange} AND e.event = 'event_2')
         SELECT t.w, r.w, count(*) FROM t JOIN r ON r.pk = t.pk AND r.w >= t.w GROUP BY 1, 2`,
      ],
      [
        'events table, newest 100 of the last day',
        {
          kind: 'EventsQuery',
          select: ['*', 'event', 'person', 'properties.$browser', 'timestamp'],
          orderBy: ['timestamp DESC'],
        },
        `SELECT e.*, p.* FROM ${joined} WHERE e.team_id = $1 AND e.timestamp >= now() - interval '1 day'
          ORDER BY e.timestamp DESC LIMIT 101`,
      ],
      [
        'HogQL events by name, 7 days',
        {
          kind: 'HogQLQuery',
          query:
            'SELECT event, count() FROM events WHERE timestamp > now() - INTERVAL 7 DAY GROUP BY event ORDER BY count() DESC',
        },
        `SELECT event, count(*) FROM events WHERE team_id = $1 AND timestamp > now() - interval '7 days'
          GROUP BY 1 ORDER BY 2 DESC LIMIT 101`,
      ],
      [
        'HogQL unique persons per day, 30 days',
        {
          kind: 'HogQLQuery',
          query:
            'SELECT toDate(timestamp) AS day, uniq(person_id) FROM events WHERE timestamp >= now() - INTERVAL 30 DAY GROUP BY day ORDER BY day',
        },
        `SELECT (e.timestamp AT TIME ZONE 'UTC')::date, count(DISTINCT ${personOf}) FROM ${joined}
          WHERE e.team_id = $1 AND e.timestamp >= now() - interval '30 days' GROUP BY 1 ORDER BY 1 LIMIT 101`,
      ],
    ];
    process.stdout.write(`\n${fmt(EVENTS)} events; p50 of ${RUNS} runs after a warm-up\n`);
    process.stdout.write(
      '| query | API p50 ms | raw SQL p50 ms | ratio | API p95 ms | raw SQL p95 ms |\n|---|---|---|---|---|---|\n',
    );
    let ok = true;
    for (const [name, query, baseline] of cases) {
      const a = await timed(() => api(query));
      const b = await timed(sql(baseline));
      const ratio = b.p50 / a.p50;
      if (ratio < 0.8) ok = false;
      process.stdout.write(
        `| ${name} | ${a.p50.toFixed(1)} | ${b.p50.toFixed(1)} | ${ratio.toFixed(2)} | ${a.p95.toFixed(1)} | ${b.p95.toFixed(1)} |\n`,
      );
    }
    process.stdout.write(`${ok ? 'PASS' : 'MISS'} every query >= 0.8 of its raw-SQL baseline\n`);
    return ok;
  } finally {
    await endPool(pool);
    await service.stop();
    if (process.env.QUERY_BENCH_DROP)
      await withMaintenanceClient(SERVER_URL, (c) =>
        c.query(`DROP DATABASE IF EXISTS sett_bench_query_${EVENTS} WITH (FORCE)`),
      );
  }
}
