// `pnpm bench ingestion`: how fast the ingestion worker (a real main.ts process) drains a
// pre-filled topic into Postgres, with and without person processing, against a baseline that
// bulk-inserts the same rows with plain pg in the same run.
//
// Pre-fill: 200k realistic events (10k distinct ids, 10% $identify / $create_alias, the rest
// custom events and $pageview) produced with capture's batching producer. The development
// broker returns one record batch per partition per fetch, so the messages are grouped by
// partition before producing (each produce request then carries one large record batch); the
// broker also keeps only ~5 MB per partition, so the topic has 48 partitions (~2 MB each) and
// the log start offsets are checked before consuming: the benchmark fails loudly if anything
// was trimmed.
//
// BENCH_CPU_PROF=<dir> writes a V8 CPU profile of each worker process into <dir> (open it in
// Chrome DevTools or speedscope). Node refuses --cpu-prof in NODE_OPTIONS, so the worker gets a
// small preload that runs the inspector's profiler and writes the profile when the process exits.
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {
  createPgPool,
  ensureDatabase,
  migrateDeploy,
  quoteIdent,
  withDatabase,
  withMaintenanceClient,
} from '@sett/db';
import { startDevBroker, type DevBroker } from '@sett/devstack';
import {
  TOPICS,
  createKafkajsProducer,
  createKafka,
  encodeCaptureMessage,
  partitionForKey,
  type CaptureMessage,
} from '@sett/kafka';
import { prng } from '@sett/testing';
import { fmt, ratioLine, startChild } from './lib';

export const N = 200_000;
const USERS = 5_000; // anon-i and user-i: 10k distinct ids
export const PARTITIONS = 48;
const BASELINE_BATCH = 2_500;
export const TOKEN = 'phc_bench_ingestion_token';
const TARGETS = { personless: 15_000, persons: 5_000, ratio: 0.4 };
const serverUrl = process.env.DATABASE_URL || 'postgresql://root@127.0.0.1:5432/postgres';
const repoRoot = path.resolve(__dirname, '..');

// --- workload -------------------------------------------------------------------------------

function uuidFrom(rand: () => number): string {
  const h = Array.from({ length: 32 }, () => Math.floor(rand() * 16).toString(16));
  h[12] = '4';
  h[16] = ((parseInt(h[16] as string, 16) & 0x3) | 0x8).toString(16);
  const s = h.join('');
  return `${s.slice(0, 8)}-${s.slice(8, 12)}-${s.slice(12, 16)}-${s.slice(16, 20)}-${s.slice(20)}`;
}

/** Deterministic, so the baseline child builds exactly the same rows. */
export function workload(personless: boolean): CaptureMessage[] {
  const rand = prng(42);
  const pages = ['/', '/pricing', '/docs', '/blog/launch', '/signup', '/app/dashboard', '/app/settings'];
  const browsers = ['Chrome', 'Firefox', 'Safari', 'Edge'];
  const customs = ['clicked button', 'signed up', 'created project', 'invited teammate', 'exported report'];
  const start = Date.UTC(2024, 4, 1);
  const out: CaptureMessage[] = [];
  for (let n = 0; n < N; n++) {
    const i = Math.floor(rand() * USERS);
    const r = rand();
    const ts = new Date(start + n * 50).toISOString();
    const base = {
      $lib: 'web',
      $lib_version: '1.160.0',
      $browser: browsers[i % browsers.length],
      $browser_version: 120 + (i % 5),
      $os: i % 3 ? 'Mac OS X' : 'Windows',
      $device_type: 'Desktop',
      $session_id: `sess-${i}-${Math.floor(n / 1000)}`,
      $window_id: `win-${i}`,
      $referrer: '$direct',
      ...(personless ? { $process_person_profile: false } : {}),
    };
    let event: string;
    let distinctId: string;
    let properties: Record<string, unknown>;
    if (r < 0.05) {
      event = '$identify';
      distinctId = `user-${i}`;
      properties = {
        ...base,
        $anon_distinct_id: `anon-${i}`,
        $set: { email: `user-${i}@example.com`, plan: i % 4 ? 'free' : 'paid' },
      };
    } else if (r < 0.1) {
      event = '$create_alias';
      distinctId = `anon-${i}`;
      properties = { ...base, alias: `user-${i}` };
    } else {
      distinctId = rand() < 0.5 ? `anon-${i}` : `user-${i}`;
      const page = pages[Math.floor(rand() * pages.length)] as string;
      if (r < 0.55) {
        event = '$pageview';
        properties = {
          ...base,
          $current_url: `https://example.com${page}`,
          $host: 'example.com',
          $pathname: page,
          title: `Example ${page}`,
        };
      } else {
        event = customs[Math.floor(rand() * customs.length)] as string;
        properties = {
          ...base,
          $current_url: `https://example.com${page}`,
          button: `btn-${Math.floor(rand() * 20)}`,
        };
      }
      if (rand() < 0.2) properties.$set = { last_seen_page: page, visits: n % 100 };
      if (rand() < 0.1) properties.$set_once = { first_page: page };
    }
    out.push({
      uuid: uuidFrom(rand),
      token: TOKEN,
      distinct_id: distinctId,
      ip: '10.1.2.3',
      now: ts,
      sent_at: ts,
      event,
      properties,
      timestamp: ts,
      historical_migration: false,
    });
  }
  return out;
}

// The producer's partitioner (kafkajs-compatible murmur2), to group messages by partition.
const partitionOf = (key: string) => partitionForKey(key, PARTITIONS);

// --- helpers --------------------------------------------------------------------------------

/** NODE_OPTIONS for a profiled worker, or nothing when BENCH_CPU_PROF is not set. */
function profilerEnv(label: string): NodeJS.ProcessEnv {
  const dir = process.env.BENCH_CPU_PROF;
  if (!dir) return {};
  fs.mkdirSync(dir, { recursive: true });
  const out = path.resolve(dir, `ingestion-${label}`);
  const preload = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'sett-prof-')), 'profile.cjs');
  // Profiler.stop answers synchronously on an in-process session, so 'exit' is late enough.
  fs.writeFileSync(
    preload,
    `const inspector = require('node:inspector');
const fs = require('node:fs');
const session = new inspector.Session();
session.connect();
session.post('Profiler.enable');
session.post('Profiler.setSamplingInterval', { interval: 200 });
session.post('Profiler.start');
process.on('exit', () => {
  session.post('Profiler.stop', (err, res) => {
    if (!err) fs.writeFileSync(${JSON.stringify(out)} + '-' + process.pid + '.cpuprofile', JSON.stringify(res.profile));
  });
});
`,
  );
  return { NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --require ${preload}`.trim() };
}

export async function freshDatabase(label: string): Promise<{ url: string; drop(): Promise<void> }> {
  const name = `sett_bench_${label}_${randomBytes(3).toString('hex')}`;
  const url = withDatabase(serverUrl, name);
  await ensureDatabase(url);
  await migrateDeploy({ databaseUrl: url });
  const pool = createPgPool({ databaseUrl: url, max: 1 });
  await pool.query(`INSERT INTO organizations (id, name, slug) VALUES (gen_random_uuid(), 'bench', 'bench')`);
  await pool.query(
    `INSERT INTO teams (uuid, organization_id, api_token, name) SELECT gen_random_uuid(), id, $1, 'bench' FROM organizations`,
    [TOKEN],
  );
  await pool.end();
  return {
    url,
    drop: () =>
      withMaintenanceClient(serverUrl, (c) =>
        c.query(`DROP DATABASE IF EXISTS ${quoteIdent(name)} WITH (FORCE)`).then(() => undefined),
      ),
  };
}

async function prefill(broker: DevBroker, messages: CaptureMessage[]) {
  const kafka = createKafka({ brokers: broker.brokers, clientId: 'bench-prefill', logLevel: 'error' });
  const producer = createKafkajsProducer({
    kafka,
    lingerMs: 20,
    maxBatchMessages: 5_000,
    maxBatchBytes: 900_000,
  });
  await producer.connect();
  const byPartition: Array<Array<{ key: string; value: string }>> = Array.from(
    { length: PARTITIONS },
    () => [],
  );
  for (const m of messages) {
    const key = `${m.token}:${m.distinct_id}`;
    byPartition[partitionOf(key)]!.push({ key, value: encodeCaptureMessage(m) });
  }
  const started = Date.now();
  // One partition at a time (order within each key is kept), so each request is one big record batch.
  for (const list of byPartition) await producer.send(TOPICS.main, list);
  const stats = producer.stats();
  await producer.disconnect();
  // Nothing trimmed: every partition still starts at 0 and holds what we sent to it.
  const admin = kafka.admin();
  await admin.connect();
  const offsets = await admin.fetchTopicOffsets(TOPICS.main);
  await admin.disconnect();
  const trimmed = offsets.filter((o) => o.low !== '0');
  const total = offsets.reduce((s, o) => s + Number(o.high), 0);
  const mismatched = offsets.filter((o) => Number(o.high) !== byPartition[o.partition]!.length);
  if (trimmed.length > 0 || total !== messages.length) {
    throw new Error(
      `BENCHMARK INVALID: the development broker trimmed the topic before it was consumed (partitions with log start > 0: ${trimmed
        .map((o) => `${o.partition}@${o.low}`)
        .join(', ')}; ${total} of ${messages.length} messages present). Use more partitions or fewer events.`,
    );
  }
  return {
    seconds: (Date.now() - started) / 1000,
    requests: stats.requests,
    avgPerRequest: stats.messagesAcked / Math.max(1, stats.requests),
    largest: stats.largestBatch,
    partitionMismatch: mismatched.length,
  };
}

export function peakRssMb(pid: number): number {
  try {
    const m = /VmHWM:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) / 1024 : NaN;
  } catch {
    return NaN;
  }
}

export function metricSum(text: string, name: string): number {
  let sum = 0;
  for (const m of text.matchAll(new RegExp(`^${name}(?:\\{[^}]*\\})? ([0-9.e+]+)$`, 'gm')))
    sum += Number(m[1]);
  return sum;
}

export async function drain(
  label: string,
  personless: boolean,
  env: Record<string, string> = {},
  /** Run on the fresh database before the worker starts (a variant's schema change). */
  setupSql?: string,
) {
  const messages = workload(personless);
  const [broker, db] = await Promise.all([startDevBroker({ partitions: PARTITIONS }), freshDatabase(label)]);
  try {
    if (setupSql) {
      const pool = createPgPool({ databaseUrl: db.url, max: 1 });
      await pool.query(setupSql);
      await pool.end();
    }
    const fill = await prefill(broker, messages);
    console.log(
      `[${label}] pre-filled ${fmt(N)} events into ${PARTITIONS} partitions in ${fill.seconds.toFixed(1)} s: ${fill.requests} produce requests, ` +
        `${fmt(fill.avgPerRequest)} messages per request (= per record batch; largest ${fmt(fill.largest)})` +
        (fill.partitionMismatch
          ? `; WARNING: ${fill.partitionMismatch} partitions differ from the expected placement`
          : ''),
    );
    const child = await startChild(
      path.join(repoRoot, 'services/ingestion/src/main.ts'),
      {
        KAFKA_BROKERS: broker.bootstrap,
        DATABASE_URL: db.url,
        INGESTION_PORT: '0',
        INGESTION_TOPICS: 'main',
        INGESTION_SESSION_TIMEOUT_MS: '6000',
        INGESTION_HEARTBEAT_INTERVAL_MS: '500',
        INGESTION_MAX_WAIT_MS: '100',
        LOG_FORMAT: 'json',
        LOG_LEVEL: 'info',
        ...profilerEnv(label),
        ...env,
      },
      /ingestion consumers started/,
    );
    const pid = child.process.pid as number;
    // INGESTION_PORT=0: the ready line is consumed by startChild, so find the listening socket in /proc.
    const port = await findPort(pid);
    const metrics = async () => (await fetch(`http://127.0.0.1:${port}/_metrics`)).text();
    let t0 = 0;
    let c0 = 0;
    let text = '';
    const deadline = Date.now() + 150_000;
    for (;;) {
      text = await metrics();
      const stored = metricSum(text, 'sett_ingestion_events_total');
      if (!t0 && stored > 0) {
        t0 = Date.now();
        c0 = stored;
      }
      if (stored >= N) break;
      if (Date.now() > deadline) throw new Error(`[${label}] drain did not finish: ${stored} of ${N}`);
      await new Promise((r) => setTimeout(r, 50));
    }
    const seconds = (Date.now() - t0) / 1000;
    const rss = peakRssMb(pid);
    const batches = metricSum(text, 'sett_ingestion_batch_size_count');
    const avgBatch = metricSum(text, 'sett_ingestion_batch_size_sum') / Math.max(1, batches);
    await child.stop();
    const pool = createPgPool({ databaseUrl: db.url, max: 1 });
    const counted = Number((await pool.query<{ n: string }>('SELECT count(*) AS n FROM events')).rows[0]!.n);
    const persons = Number((await pool.query<{ n: string }>('SELECT count(*) AS n FROM persons')).rows[0]!.n);
    await pool.end();
    if (counted !== N) throw new Error(`[${label}] ${counted} events in Postgres, expected ${N}`);
    const rate = (N - c0) / seconds;
    console.log(
      `[${label}] drained in ${seconds.toFixed(1)} s: ${fmt(rate)} events/s; ${fmt(batches)} batches, ${fmt(avgBatch)} messages per batch on average; ` +
        `persons: ${fmt(persons)}; worker peak RSS ${rss.toFixed(0)} MB`,
    );
    return { rate, rss };
  } finally {
    await broker.stop();
    await db.drop();
  }
}

export async function findPort(pid: number): Promise<number> {
  // /proc/net/tcp lists listening sockets by inode; /proc/<pid>/fd links to them.
  for (let attempt = 0; attempt < 50; attempt++) {
    const inodes = new Set<string>();
    for (const fd of fs.readdirSync(`/proc/${pid}/fd`)) {
      try {
        const m = /socket:\[(\d+)\]/.exec(fs.readlinkSync(`/proc/${pid}/fd/${fd}`));
        if (m) inodes.add(m[1] as string);
      } catch {
        // fd closed meanwhile
      }
    }
    for (const line of fs.readFileSync('/proc/net/tcp', 'utf8').split('\n').slice(1)) {
      const cols = line.trim().split(/\s+/);
      if (cols[3] === '0A' && inodes.has(cols[9] as string)) {
        const port = parseInt((cols[1] as string).split(':')[1] as string, 16);
        const ok = await fetch(`http://127.0.0.1:${port}/_health`)
          .then((r) => r.ok)
          .catch(() => false);
        if (ok) return port;
      }
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error('could not find the worker port');
}

/** The baseline, run as a child process: the same rows, plain multi-row INSERTs, 4 connections. */
async function baselineChild(): Promise<void> {
  const url = process.env.BENCH_DATABASE_URL as string;
  const messages = workload(true);
  const pool = createPgPool({ databaseUrl: url, max: 4 });
  const teamId = (await pool.query<{ id: number }>('SELECT id FROM teams WHERE api_token = $1', [TOKEN]))
    .rows[0]!.id;
  const rows = messages.map((m) => ({ ...m, props: JSON.stringify(m.properties) }));
  const started = Date.now();
  let next = 0;
  const workerLoop = async () => {
    for (;;) {
      const from = next;
      next += BASELINE_BATCH;
      if (from >= rows.length) return;
      const chunk = rows.slice(from, from + BASELINE_BATCH);
      await pool.query(
        `INSERT INTO events (uuid, team_id, event, distinct_id, properties, timestamp)
         SELECT * FROM unnest($1::uuid[], $2::int[], $3::text[], $4::text[], $5::jsonb[], $6::timestamptz[])
         ON CONFLICT (team_id, uuid) DO NOTHING`,
        [
          chunk.map((r) => r.uuid),
          chunk.map(() => teamId),
          chunk.map((r) => r.event),
          chunk.map((r) => r.distinct_id),
          chunk.map((r) => r.props),
          chunk.map((r) => r.timestamp),
        ],
      );
    }
  };
  await Promise.all([workerLoop(), workerLoop(), workerLoop(), workerLoop()]);
  const seconds = (Date.now() - started) / 1000;
  await pool.end();
  console.log(`BASELINE_RESULT ${seconds}`);
}

export async function run(): Promise<boolean> {
  // Event and property definitions (one upsert per batch for names not seen recently): the same
  // drain without them, in the same run, is the figure they are held to (within 5%).
  // Alternated twice, the faster of each kept: one slow drain on a shared machine says little.
  const off = { INGESTION_DEFINITIONS_ENABLED: 'false' };
  const bare1 = await drain('personless-nodefs', true, off);
  const on1 = await drain('personless', true);
  const bare2 = await drain('personless-nodefs', true, off);
  const on2 = await drain('personless', true);
  const bare = bare1.rate >= bare2.rate ? bare1 : bare2;
  const personless = on1.rate >= on2.rate ? on1 : on2;
  // The hourly event counts (event_counts_hourly, kept by a statement trigger on events in the
  // batch's transaction): the same drain with persons, the trigger disabled, alternated twice.
  const noCounts = 'ALTER TABLE events DISABLE TRIGGER events_counts_add';
  const persons1 = await drain('persons', false);
  const bareCounts1 = await drain('persons-nocounts', false, {}, noCounts);
  const persons2 = await drain('persons', false);
  const bareCounts2 = await drain('persons-nocounts', false, {}, noCounts);
  const persons = persons1.rate >= persons2.rate ? persons1 : persons2;
  const bareCounts = bareCounts1.rate >= bareCounts2.rate ? bareCounts1 : bareCounts2;
  const base = await baselineRun();
  console.log(ratioLine('ingestion, $process_person_profile false', personless.rate, base, 'events/s'));
  console.log(ratioLine('ingestion, with person processing', persons.rate, base, 'events/s'));
  console.log(
    ratioLine('ingestion personless, definitions on vs off', personless.rate, bare.rate, 'events/s'),
  );
  console.log(
    ratioLine('ingestion with persons, hourly counts on vs off', persons.rate, bareCounts.rate, 'events/s'),
  );
  const checks = [
    [`personless >= ${fmt(TARGETS.personless)} events/s`, personless.rate >= TARGETS.personless],
    [`with persons >= ${fmt(TARGETS.persons)} events/s`, persons.rate >= TARGETS.persons],
    [`personless >= ${TARGETS.ratio} x baseline`, personless.rate >= TARGETS.ratio * base],
    ['definitions cost <= 5% (on / off >= 0.95)', personless.rate >= 0.95 * bare.rate],
    ['hourly counts cost <= 10% (on / off >= 0.9)', persons.rate >= 0.9 * bareCounts.rate],
  ] as const;
  for (const [what, ok] of checks) console.log(`${ok ? 'OK  ' : 'MISS'} ${what}`);
  console.log(
    `worker peak RSS: ${personless.rss.toFixed(0)} MB (personless), ${persons.rss.toFixed(0)} MB (persons)`,
  );
  return checks.every(([, ok]) => ok);
}

async function baselineRun(): Promise<number> {
  const { spawn } = await import('node:child_process');
  const db = await freshDatabase('baseline');
  try {
    const out = await new Promise<string>((resolve, reject) => {
      const child = spawn(process.execPath, ['--import', 'tsx', __filename], {
        env: { ...process.env, BENCH_ROLE: 'baseline', BENCH_DATABASE_URL: db.url },
        stdio: ['ignore', 'pipe', 'inherit'],
      });
      let text = '';
      child.stdout.on('data', (c: Buffer) => (text += c.toString()));
      const timer = setTimeout(() => child.kill('SIGKILL'), 120_000);
      child.once('exit', (code) => {
        clearTimeout(timer);
        if (code === 0) resolve(text);
        else reject(new Error(`baseline child exited with ${code}: ${text}`));
      });
    });
    const seconds = Number(/BASELINE_RESULT ([0-9.]+)/.exec(out)?.[1]);
    const rate = N / seconds;
    console.log(
      `[baseline] plain bulk INSERT of the same ${fmt(N)} rows (${fmt(BASELINE_BATCH)} per statement, 4 connections): ${seconds.toFixed(1)} s, ${fmt(rate)} rows/s`,
    );
    return rate;
  } finally {
    await db.drop();
  }
}

if (process.env.BENCH_ROLE === 'baseline') {
  baselineChild().then(
    () => process.exit(0),
    (error: Error) => {
      process.stderr.write(`baseline failed: ${error.stack}\n`);
      process.exit(1);
    },
  );
}
