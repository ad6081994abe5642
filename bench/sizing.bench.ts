// `pnpm bench sizing`: the measured rows of docs/sizing.md (`pnpm bench sizing --write` puts them
// between the markers there). Each service runs as its own process and is measured by the CPU
// time it used (utime + stime from /proc), not by wall time: on a shared machine a busy
// neighbour slows the wall clock, but the work per event stays the same. Rows:
//   capture      events per CPU-second of capture, posting 50-event batches to /batch/;
//                baseline: a node:http server that reads and JSON-parses the same bodies.
//   ingestion    events per CPU-second of the ingestion process and of its Postgres backends,
//                SIZING_EVENTS events (default 100,000) with person processing and without;
//                the ratio is with persons against without.
//   decide       /flags?v=2 requests per CPU-second of decide (50 flags, the decide bench's mix);
//                baseline: express answering a fixed response of the same size.
//   postgres     bytes on disk per million events (tables and indexes), and of persons.
//   redis        bytes of one project's cached flag list per 1,000 flags (MEMORY USAGE).
// Capture and decide figures move with the HTTP layer and the Kafka producer: re-run this
// after those change. Bounded: about two minutes, loopback only.
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { createRedis, redisKeys } from '@sett/cache';
import { createPgPool } from '@sett/db';
import { startDevBroker } from '@sett/devstack';
import { createBatchingProducer, createKafka, TOPICS } from '@sett/kafka';
import { bodyMaker, prepareDatabase, seed } from './decide.bench';
import { fmt, freePort, insertBenchProject, load, startCapture, startChild, startDecide } from './lib';

const BASELINE_ENV = 'SETT_SIZING_BASELINE_PORT';
const DAY = 86_400;
const TICKS = 100; // USER_HZ on Linux

// The baseline server: read the body, parse it, answer 200 (what any JSON endpoint costs).
if (process.env[BASELINE_ENV]) {
  const port = Number(process.env[BASELINE_ENV]);
  http
    .createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        JSON.parse(Buffer.concat(chunks).toString('utf8'));
        res.writeHead(200, { 'content-type': 'application/json' }).end('{"status":1}');
      });
    })
    .listen(port, '127.0.0.1', () => process.stdout.write(`baseline ready on ${port}\n`));
}

/** CPU seconds a process has used so far. */
function cpuSeconds(pid: number): number {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / TICKS;
}

async function cpuDuring(pids: number[], work: () => Promise<void>): Promise<number> {
  const before = pids.map(cpuSeconds);
  await work();
  return pids.reduce((sum, pid, i) => sum + cpuSeconds(pid) - before[i]!, 0);
}

/** A posthog-js $pageview as it arrives: about 40 properties, about 1.3 KB of JSON. */
function pageview(distinctId: string, token: string, i: number) {
  const page = `/docs/page-${i % 200}`;
  return {
    event: '$pageview',
    distinct_id: distinctId,
    timestamp: new Date().toISOString(),
    properties: {
      token,
      $os: 'Mac OS X',
      $os_version: '14.5.0',
      $browser: 'Chrome',
      $browser_version: 126,
      $device_type: 'Desktop',
      $current_url: `https://example.com${page}?utm_source=newsletter`,
      $host: 'example.com',
      $pathname: page,
      $raw_user_agent:
        'Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Safari/537.36',
      $screen_height: 1117,
      $screen_width: 1728,
      $viewport_height: 992,
      $viewport_width: 1728,
      $lib: 'web',
      $lib_version: '1.200.0',
      $insert_id: randomUUID().slice(0, 16),
      $time: Date.now() / 1000,
      $device_id: randomUUID(),
      $session_id: randomUUID(),
      $window_id: randomUUID(),
      $pageview_id: randomUUID(),
      $referrer: 'https://www.google.com/',
      $referring_domain: 'www.google.com',
      $initial_referrer: '$direct',
      $initial_referring_domain: '$direct',
      utm_source: 'newsletter',
      $is_identified: false,
      $process_person_profile: true,
      title: 'Docs page',
      $sent_at: new Date().toISOString(),
    },
  };
}

type Row = { what: string; value: string; baseline?: string; note: string };

async function measureCapture(dbUrl: string, brokers: string, token: string): Promise<Row> {
  const capture = await startCapture(dbUrl, brokers);
  const baselinePort = await freePort();
  const baseline = await startChild(__filename, { [BASELINE_ENV]: String(baselinePort) }, /baseline ready/);
  try {
    const batch = () =>
      JSON.stringify({
        api_key: token,
        batch: Array.from({ length: 50 }, (_, i) =>
          pageview(`user-${Math.floor(Math.random() * 10_000)}`, token, i),
        ),
      });
    const run = async (port: number, pid: number) => {
      await load({
        url: `http://127.0.0.1:${port}/batch/`,
        body: batch,
        connections: 20,
        durationSeconds: 2,
      });
      let requests = 0;
      const cpu = await cpuDuring([pid], async () => {
        const r = await load({
          url: `http://127.0.0.1:${port}/batch/`,
          body: batch,
          connections: 20,
          durationSeconds: 10,
        });
        if (r.non2xx > 0 || r.errors > 0) throw new Error(`load saw ${r.non2xx} non-2xx, ${r.errors} errors`);
        requests = r.requests;
      });
      return (requests * 50) / cpu;
    };
    const sett = await run(capture.port, capture.process.pid!);
    const base = await run(baselinePort, baseline.process.pid!);
    return {
      what: 'capture: events per day per core',
      value: `${fmt((sett * DAY) / 1e6)} M`,
      baseline: `${fmt((base * DAY) / 1e6)} M (ratio ${(sett / base).toFixed(2)})`,
      note: `${fmt(sett)} events per CPU-second; 50-event /batch/ requests of ~1.3 KB page views`,
    };
  } finally {
    await capture.stop();
    await baseline.stop();
  }
}

async function measureIngestion(
  dbUrl: string,
  broker: { bootstrap: string },
  token: string,
  teamId: number,
  persons: boolean,
  events: number,
): Promise<{ perCpuSecond: number; postgresPerCpuSecond: number; seconds: number }> {
  const pool = createPgPool({ databaseUrl: dbUrl, max: 2 });
  const port = await freePort();
  const ingestion = await startChild(
    path.join(__dirname, '..', 'services', 'ingestion', 'src', 'main.ts'),
    {
      DATABASE_URL: dbUrl,
      KAFKA_BROKERS: broker.bootstrap,
      INGESTION_PORT: String(port),
      INGESTION_TOPICS: 'main',
      INGESTION_SESSION_TIMEOUT_MS: '3000',
      INGESTION_HEARTBEAT_INTERVAL_MS: '300',
      INGESTION_MAX_WAIT_MS: '100',
      LOG_LEVEL: 'info',
      LOG_FORMAT: 'json',
      NODE_ENV: 'production',
    },
    /ingestion ready/,
  );
  try {
    for (;;) {
      if ((await fetch(`http://127.0.0.1:${port}/_ready`)).status === 200) break;
      await new Promise((r) => setTimeout(r, 200));
    }
    const { rows: before } = await pool.query<{ n: string }>(
      'SELECT count(*)::text AS n FROM events WHERE team_id = $1',
      [teamId],
    );
    const target = Number(before[0]!.n) + events;
    const kafka = createKafka({ brokers: [broker.bootstrap], clientId: 'sizing', logLevel: 'nothing' });
    const producer = createBatchingProducer({ kafka, lingerMs: 5, maxBatchMessages: 2000 });
    await producer.connect();
    const ips = ['81.2.69.142', '8.8.8.8', '1.1.1.1', '203.0.113.9', '2.125.160.216'];
    const backendPids = async () =>
      (
        await pool.query<{ pid: number }>(
          `SELECT pid FROM pg_stat_activity WHERE application_name = 'sett-ingestion' AND datname = current_database()`,
        )
      ).rows.map((r) => r.pid);
    const started = Date.now();
    const pgBefore = new Map((await backendPids()).map((pid) => [pid, cpuSeconds(pid)]));
    const stored = async () =>
      Number(
        (
          await pool.query<{ n: string }>('SELECT count(*)::text AS n FROM events WHERE team_id = $1', [
            teamId,
          ])
        ).rows[0]!.n,
      );
    // The development broker keeps only about 5 MB per partition: the backlog is held under
    // BACKLOG messages (about 8 MB over 4 partitions), so nothing is dropped before it is read.
    const BACKLOG = 6_000;
    let last = { n: -1, at: Date.now() };
    const waitUntil = async (n: number) => {
      for (;;) {
        const now = await stored();
        if (now >= n) return;
        if (now !== last.n) last = { n: now, at: Date.now() };
        else if (Date.now() - last.at > 60_000)
          throw new Error(`ingestion stalled at ${now - (target - events)} of ${events} events`);
        await new Promise((r) => setTimeout(r, 100));
      }
    };
    const ingestionCpu = await cpuDuring([ingestion.process.pid!], async () => {
      for (let sent = 0; sent < events; sent += 2000) {
        const n = Math.min(2000, events - sent);
        await producer.send(
          TOPICS.main,
          Array.from({ length: n }, (_, i) => {
            const e = pageview(`user-${(sent + i) % 20_000}`, token, i);
            const now = new Date().toISOString();
            const props = persons ? e.properties : { ...e.properties, $process_person_profile: false };
            return {
              key: `${token}:${e.distinct_id}`,
              value: Buffer.from(
                JSON.stringify({
                  uuid: randomUUID(),
                  token,
                  distinct_id: e.distinct_id,
                  ip: ips[i % ips.length],
                  now,
                  sent_at: now,
                  event: e.event,
                  properties: props,
                  timestamp: now,
                  historical_migration: false,
                }),
              ),
            };
          }),
        );
        await waitUntil(target - events + sent + n - BACKLOG);
      }
      await waitUntil(target);
    });
    const seconds = (Date.now() - started) / 1000;
    // Backends opened during the run count from zero.
    let postgresCpu = 0;
    for (const pid of await backendPids()) postgresCpu += cpuSeconds(pid) - (pgBefore.get(pid) ?? 0);
    await producer.disconnect();
    return { perCpuSecond: events / ingestionCpu, postgresPerCpuSecond: events / postgresCpu, seconds };
  } finally {
    await ingestion.stop();
    await pool.end();
  }
}

async function measureDecide(dbUrl: string): Promise<Row[]> {
  const project = await seed(dbUrl);
  const decide = await startDecide(dbUrl);
  const baselinePort = await freePort();
  const baseline = await startChild(__filename, { [BASELINE_ENV]: String(baselinePort) }, /baseline ready/);
  const redis = createRedis({ url: process.env.REDIS_URL || 'redis://127.0.0.1:6379', name: 'sizing' });
  const pool = createPgPool({ databaseUrl: dbUrl, max: 2 });
  try {
    const body = bodyMaker(project.token);
    const url = `http://127.0.0.1:${decide.port}/flags/?v=2`;
    const run = async (target: string, pid: number) => {
      await load({ url: target, body, connections: 20, durationSeconds: 2 });
      let requests = 0;
      const cpu = await cpuDuring([pid], async () => {
        const r = await load({ url: target, body, connections: 20, durationSeconds: 10 });
        if (r.non2xx > 0 || r.errors > 0) throw new Error(`load saw ${r.non2xx} non-2xx, ${r.errors} errors`);
        requests = r.requests;
      });
      return requests / cpu;
    };
    const sett = await run(url, decide.process.pid!);
    const base = await run(`http://127.0.0.1:${baselinePort}/`, baseline.process.pid!);

    // Redis: a project with 1,000 flags, loaded by decide from Postgres and cached in Redis.
    const big = await insertBenchProject(pool);
    await pool.query(
      `INSERT INTO feature_flags (team_id, key, name, filters)
       SELECT $1, 'flag-' || i, 'Flag ' || i,
              jsonb_build_object('groups', jsonb_build_array(jsonb_build_object(
                'properties', jsonb_build_array(jsonb_build_object('key', 'plan', 'type', 'person', 'operator', 'exact', 'value', jsonb_build_array('pro'))),
                'rollout_percentage', i % 100)))
         FROM generate_series(1, 1000) AS i`,
      [big.teamId],
    );
    await redis.del(redisKeys.flags(big.teamId));
    const answer = await fetch(url, {
      method: 'POST',
      body: JSON.stringify({ api_key: big.token, distinct_id: 'x' }),
    });
    if (answer.status !== 200) throw new Error(`decide answered ${answer.status}`);
    let bytes: number | null = null;
    for (let i = 0; i < 50 && bytes === null; i++) {
      bytes = (await redis.call('MEMORY', 'USAGE', redisKeys.flags(big.teamId))) as number | null;
      if (bytes === null) await new Promise((r) => setTimeout(r, 100));
    }
    return [
      {
        what: 'decide: requests per second per core',
        value: fmt(sett),
        baseline: `${fmt(base)} (ratio ${(sett / base).toFixed(2)})`,
        note: '/flags?v=2, 50 flags, half the requests reading stored persons or groups',
      },
      {
        what: 'Redis: cached flag list per 1,000 flags',
        value: `${fmt((bytes ?? 0) / 1024)} KiB`,
        note: 'one person-property condition each; a project takes one such key',
      },
    ];
  } finally {
    await decide.stop();
    await baseline.stop();
    redis.disconnect();
    await pool.end();
  }
}

async function diskRows(dbUrl: string, teamId: number, events: number): Promise<Row[]> {
  const pool = createPgPool({ databaseUrl: dbUrl, max: 1 });
  try {
    await pool.query('VACUUM ANALYZE');
    const { rows } = await pool.query<{
      events_total: string;
      events_heap: string;
      persons: string;
      n: string;
      p: string;
    }>(
      `SELECT (SELECT sum(pg_total_relation_size(inhrelid)) FROM pg_inherits WHERE inhparent = 'events'::regclass)::text AS events_total,
              (SELECT sum(pg_table_size(inhrelid)) FROM pg_inherits WHERE inhparent = 'events'::regclass)::text AS events_heap,
              (pg_total_relation_size('persons') + pg_total_relation_size('person_distinct_ids'))::text AS persons,
              (SELECT count(*) FROM events)::text AS n,
              (SELECT count(*) FROM persons WHERE team_id = $1)::text AS p`,
      [teamId],
    );
    const r = rows[0]!;
    const perMillion = (bytes: string) => (Number(bytes) / Number(r.n)) * 1e6;
    return [
      {
        what: 'Postgres: events, per million (with indexes)',
        value: `${(perMillion(r.events_total) / 1e9).toFixed(2)} GB`,
        note: `of which table ${(perMillion(r.events_heap) / 1e9).toFixed(2)} GB; ${fmt(Number(r.n))} stored page views with GeoIP properties`,
      },
      {
        what: 'Postgres: persons, per million events',
        value: `${(perMillion(r.persons) / 1e9).toFixed(3)} GB`,
        note: `${fmt(Number(r.p))} persons for ${fmt(events)} events with persons (about ${Math.round(events / Number(r.p))} events each)`,
      },
    ];
  } finally {
    await pool.end();
  }
}

function table(rows: Row[]): string {
  return [
    '| measured | value | same-run baseline | how |',
    '|---|---|---|---|',
    ...rows.map((r) => `| ${r.what} | ${r.value} | ${r.baseline ?? '-'} | ${r.note} |`),
  ].join('\n');
}

export async function run(): Promise<boolean> {
  const serverUrl = process.env.DATABASE_URL || 'postgresql://root@127.0.0.1:5432/sett';
  const events = Number(process.env.SIZING_EVENTS ?? 100_000);
  const db = await prepareDatabase(serverUrl);
  const broker = await startDevBroker({ partitions: 4 });
  const pool = createPgPool({ databaseUrl: db.url, max: 1 });
  try {
    const rows: Row[] = [];
    const project = await insertBenchProject(pool);
    // Capture gets a broker of its own: nothing it produces may reach the ingestion runs.
    const captureBroker = await startDevBroker({ partitions: 4 });
    try {
      rows.push(await measureCapture(db.url, captureBroker.bootstrap, project.token));
    } finally {
      await captureBroker.stop();
    }
    process.stdout.write(`${rows.at(-1)!.what}: ${rows.at(-1)!.value}\n`);

    const personless = await insertBenchProject(pool);
    const without = await measureIngestion(
      db.url,
      broker,
      personless.token,
      personless.teamId,
      false,
      events,
    );
    const withPersons = await measureIngestion(db.url, broker, project.token, project.teamId, true, events);
    rows.push(
      {
        what: 'ingestion with persons: events per day per core',
        value: `${fmt((withPersons.perCpuSecond * DAY) / 1e6)} M`,
        baseline: `${fmt((without.perCpuSecond * DAY) / 1e6)} M without persons (ratio ${(withPersons.perCpuSecond / without.perCpuSecond).toFixed(2)})`,
        note: `ingestion process only; its Postgres backends: ${fmt((withPersons.postgresPerCpuSecond * DAY) / 1e6)} M events per day per core (${fmt((without.postgresPerCpuSecond * DAY) / 1e6)} M without persons); ${fmt(events)} events each, 20,000 distinct ids`,
      },
      {
        what: 'ingestion without persons: events per day per core',
        value: `${fmt((without.perCpuSecond * DAY) / 1e6)} M`,
        note: `$process_person_profile: false; wall time ${without.seconds.toFixed(1)} s (with persons ${withPersons.seconds.toFixed(1)} s)`,
      },
    );
    process.stdout.write(`ingestion: ${rows.at(-2)!.value} with persons, ${rows.at(-1)!.value} without\n`);
    rows.push(...(await diskRows(db.url, project.teamId, events)));
    rows.push(...(await measureDecide(db.url)));
    rows.push({
      what: 'Redis: per 100k cached persons',
      value: '0',
      note: 'decide caches person properties in its own memory for DECIDE_PERSON_CACHE_TTL_MS, not in Redis',
    });
    const text = table(rows);
    process.stdout.write(`\n${text}\n`);
    if (process.argv.includes('--write')) {
      const file = path.join(__dirname, '..', 'docs', 'sizing.md');
      const doc = fs.readFileSync(file, 'utf8');
      const begin = '<!-- BEGIN MEASURED ROWS (pnpm bench sizing --write) -->';
      const end = '<!-- END MEASURED ROWS -->';
      const a = doc.indexOf(begin);
      const b = doc.indexOf(end);
      if (a < 0 || b < a) throw new Error(`docs/sizing.md lacks the markers ${begin} ... ${end}`);
      const stamp = `Measured ${new Date().toISOString().slice(0, 10)} on ${(await import('node:os')).cpus().length} cores (load average ${(await import('node:os')).loadavg()[0]!.toFixed(1)} at the end).`;
      fs.writeFileSync(file, `${doc.slice(0, a + begin.length)}\n\n${stamp}\n\n${text}\n\n${doc.slice(b)}`);
      process.stdout.write('docs/sizing.md: measured rows written\n');
    }
    return true;
  } finally {
    await pool.end();
    await broker.stop();
    await db.drop();
  }
}
