// No loss, no duplicates: the worker runs as a real process (main.ts), is SIGKILLed in the
// middle of a stream of events with identifies and aliases, and is restarted. Afterwards
// Postgres holds exactly the produced events, once each, and the same persons (which distinct
// ids belong together, with which properties) as an uninterrupted run into another database.
// The workload keeps the expected state independent of how partitions interleave: each
// property key is written by one distinct id only, so any valid processing order agrees.
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import readline from 'node:readline';
import { createRedis } from '@sett/cache';
import { createPgPool } from '@sett/db';
import { createTestDatabase, type TestDatabase } from '@sett/testing';
import type { Pool } from 'pg';
import { captureMessage, createTeam, personState, setupEnv, startWorker, waitFor, type Env } from './helpers';
import { createProducer, encodeCaptureMessage, TOPICS, type CaptureMessage } from '@sett/kafka';

jest.setTimeout(120_000);

const repoRoot = path.resolve(__dirname, '../../../..');
const USERS = 120;

let env: Env;
let refDb: TestDatabase;
let refPool: Pool;
let token: string;
const children: ChildProcess[] = [];

beforeAll(async () => {
  env = await setupEnv(8);
  refDb = await createTestDatabase();
  refPool = createPgPool({ databaseUrl: refDb.url, max: 4 });
  ({ token } = await createTeam(env.pool));
  await refPool.query(`INSERT INTO organizations (id, name, slug) VALUES (gen_random_uuid(), 'ref', 'ref')`);
  await refPool.query(
    `INSERT INTO teams (uuid, organization_id, api_token, name) SELECT gen_random_uuid(), id, $1, 'ref' FROM organizations`,
    [token],
  );
});

afterAll(async () => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  const raw = createRedis({ url: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379' });
  await raw.del(`sett:token:${token}`).catch(() => undefined);
  await raw.quit();
  await refPool?.end();
  await refDb?.drop();
  await env?.close();
});

function workload(): CaptureMessage[] {
  const out: CaptureMessage[] = [];
  for (let i = 0; i < USERS; i++) {
    const [a, u, c] = [`anon-${i}`, `user-${i}`, `crm-${i}`];
    for (let k = 0; k < 6; k++)
      out.push(
        captureMessage(token, a, k % 2 ? '$pageview' : 'clicked', {
          $set: { [`pa_${i}`]: k },
          $set_once: { [`fa_${i}`]: k },
        }),
      );
    for (let k = 0; k < 3; k++)
      out.push(captureMessage(token, u, 'used feature', { $set: { [`pu_${i}`]: k } }));
    out.push(
      captureMessage(token, u, '$identify', {
        $anon_distinct_id: a,
        $set: { [`email_${i}`]: `${u}@x.test` },
      }),
    );
    for (let k = 0; k < 2; k++) out.push(captureMessage(token, c, 'crm sync', { $set: { [`pc_${i}`]: k } }));
    out.push(captureMessage(token, u, '$create_alias', { alias: c }));
    out.push(
      captureMessage(token, u, '$groupidentify', {
        $group_type: 'company',
        $group_key: `co-${i}`,
        $group_set: { owner: u },
      }),
    );
    out.push(captureMessage(token, a, 'personless', { $process_person_profile: false }));
  }
  // Interleave users so that every batch mixes them (per-key order is kept).
  return out.sort((x, y) => Number(x.distinct_id.split('-')[1]) - Number(y.distinct_id.split('-')[1]) || 0);
}

function spawnWorker(): { child: ChildProcess; port: Promise<number> } {
  const child = spawn(process.execPath, ['--import', 'tsx', 'services/ingestion/src/main.ts'], {
    cwd: repoRoot,
    env: {
      ...process.env,
      KAFKA_BROKERS: env.broker.bootstrap,
      DATABASE_URL: env.db.url,
      INGESTION_PORT: '0',
      INGESTION_TOPICS: 'main,overflow',
      INGESTION_SESSION_TIMEOUT_MS: '3000',
      INGESTION_HEARTBEAT_INTERVAL_MS: '300',
      INGESTION_MAX_WAIT_MS: '200',
      // Small batches, one at a time: many commit points to die between.
      INGESTION_BATCH_MAX_EVENTS: '20',
      INGESTION_BATCH_CONCURRENCY: '1',
      LOG_FORMAT: 'json',
      LOG_LEVEL: 'info',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  const lines: string[] = [];
  const port = new Promise<number>((resolve, reject) => {
    for (const s of [child.stdout!, child.stderr!]) {
      readline.createInterface({ input: s }).on('line', (l) => {
        lines.push(l);
        const m = /ingestion ready.*"port":(\d+)/.exec(l);
        if (m) resolve(Number(m[1]));
      });
    }
    child.once('exit', (code, signal) =>
      reject(new Error(`worker exited (${code ?? signal}) before ready:\n${lines.slice(-20).join('\n')}`)),
    );
  });
  port.catch(() => undefined);
  return { child, port };
}

const count = async (pool: Pool) =>
  Number((await pool.query<{ n: string }>('SELECT count(*) AS n FROM events')).rows[0]!.n);

it('SIGKILL in the middle, restart: exactly N events and the same persons as an uninterrupted run', async () => {
  const messages = workload();
  const N = messages.length;
  // Small produce requests make many small batches: many commit points to die between. The
  // shipped client (node-rdkafka when built) with the shipped compression, as capture produces.
  const producer = createProducer({
    brokers: env.broker.brokers,
    clientId: 'crash-test',
    lingerMs: 1,
    maxBatchMessages: 40,
    compression: 'lz4',
  });
  await producer.connect();
  for (let i = 0; i < N; i += 40) {
    await producer.send(
      TOPICS.main,
      messages
        .slice(i, i + 40)
        .map((m) => ({ key: `${m.token}:${m.distinct_id}`, value: encodeCaptureMessage(m) })),
    );
  }
  await producer.disconnect();

  const first = spawnWorker();
  await first.port;
  const atKill = await waitFor(
    'some events stored',
    async () => {
      const n = await count(env.pool);
      return n > N * 0.15 ? n : false;
    },
    60_000,
  );
  first.child.kill('SIGKILL');
  await new Promise((r) => first.child.once('exit', r));
  expect(atKill).toBeLessThan(N); // really in the middle

  const second = spawnWorker();
  const port = await second.port;
  await waitFor('all events after the restart', async () => (await count(env.pool)) >= N, 90_000);

  // Operations endpoints of the real process.
  const ready = await waitFor('ready', async () =>
    (await fetch(`http://127.0.0.1:${port}/_ready`)).status === 200 ? true : false,
  );
  expect(ready).toBe(true);
  const metrics = await waitFor('lag reaches 0 in /_metrics', async () => {
    const text = await (await fetch(`http://127.0.0.1:${port}/_metrics`)).text();
    const lags = [
      ...text.matchAll(/^sett_ingestion_consumer_lag\{[^}]*topic="events_plugin_ingestion"[^}]*\} (\d+)/gm),
    ].map((m) => Number(m[1]));
    return lags.length === 8 && lags.every((l) => l === 0) ? text : false;
  });
  expect(metrics).toMatch(/sett_ingestion_events_total\{[^}]*\} \d+/);
  expect(metrics).toMatch(/sett_ingestion_batch_duration_seconds_bucket/);

  // Graceful stop: exits 0.
  const exited = new Promise<number | null>((r) => second.child.once('exit', (code) => r(code)));
  second.child.kill('SIGTERM');
  expect(await exited).toBe(0);

  // Exactly N, by uuid.
  const stored = await env.pool.query<{ uuid: string }>('SELECT uuid FROM events ORDER BY uuid');
  expect(stored.rows.map((r) => r.uuid)).toEqual(messages.map((m) => m.uuid).sort());

  // The reference: an uninterrupted in-process run of the same topic into another database.
  const ref = startWorker(env, {
    pool: refPool,
    groupIds: { live: 'reference-live', historical: 'reference-historical' },
    config: { topics: ['main'] },
  });
  await ref.worker.start();
  try {
    await waitFor('the reference run', async () => (await count(refPool)) >= N, 90_000);
  } finally {
    await ref.worker.stop();
  }
  const teamOf = async (pool: Pool) =>
    (await pool.query<{ id: number }>('SELECT id FROM teams WHERE api_token = $1', [token])).rows[0]!.id;
  const crashed = await personState(env.pool, await teamOf(env.pool));
  const expected = await personState(refPool, await teamOf(refPool));
  expect(crashed).toHaveLength(USERS);
  expect(crashed).toEqual(expected);
  expect(crashed[0]).toEqual({
    ids: ['anon-0', 'crm-0', 'user-0'],
    properties: { pa_0: 5, fa_0: 0, pu_0: 2, email_0: 'user-0@x.test', pc_0: 1 },
    isIdentified: true,
  });
  const groups = (pool: Pool) =>
    pool.query('SELECT group_key, group_properties FROM groups ORDER BY group_key').then((r) => r.rows);
  expect(await groups(env.pool)).toEqual(await groups(refPool));
});
