// Postgres unavailable: the worker holds the partition, retries with backoff, commits no
// offsets and reports not ready; when Postgres is back every event lands exactly once.
// Postgres is taken away with a real TCP proxy in front of it that we close and reopen.
import { createPgPool } from '@sett/db';
import { startTcpProxy, type TcpProxy } from '@sett/testing';
import type { Pool } from 'pg';
import {
  captureMessage,
  countEvents,
  createTeam,
  metricValue,
  produce,
  setupEnv,
  startWorker,
  waitFor,
  type Env,
} from './helpers';

jest.setTimeout(60_000);

let env: Env;
let proxyPool: Pool;
let proxy: TcpProxy;
let running: ReturnType<typeof startWorker>;

beforeAll(async () => {
  env = await setupEnv(2);
  const url = new URL(env.db.url);
  proxy = await startTcpProxy({ host: url.hostname, port: Number(url.port || 5432) });
  url.port = String(proxy.port);
  proxyPool = createPgPool({ databaseUrl: url.toString(), max: 4 });
  proxyPool.on('error', () => undefined);
});

afterAll(async () => {
  await running?.worker.stop();
  await proxyPool?.end();
  await proxy?.close();
  await env?.close();
});

it('retries while Postgres is down, without committing, and then stores everything once', async () => {
  const team = await createTeam(env.pool);
  running = startWorker(env, { pool: proxyPool });
  await running.worker.start();
  const warmup = captureMessage(team.token, 'd0', 'warm-up');
  await produce(env.producer, [warmup]);
  await waitFor('the warm-up event', async () => (await countEvents(env.pool)) === 1);

  await proxy.down();
  const events = Array.from({ length: 50 }, (_, i) =>
    captureMessage(team.token, `d${i % 5}`, 'while down', { $set: { i } }),
  );
  await produce(env.producer, events);
  await waitFor(
    'retries',
    async () =>
      (await metricValue(running.registry, 'sett_ingestion_batch_retries_total', { stage: 'postgres' })) >= 2,
  );
  expect(running.worker.problems().join()).toMatch(/postgres/);
  expect(await countEvents(env.pool)).toBe(1);
  const lag = await running.worker.lag();
  expect(lag.reduce((s, l) => s + l.lag, 0)).toBeGreaterThanOrEqual(events.length);

  await proxy.up();
  await waitFor(
    'every event after recovery',
    async () => (await countEvents(env.pool)) === 1 + events.length,
  );
  await waitFor(
    'ready again and committed',
    async () =>
      running.worker.problems().length === 0 && (await running.worker.lag()).every((l) => l.lag === 0),
  );
  const persons = await env.pool.query(`SELECT properties FROM persons ORDER BY id`);
  expect(persons.rows).toHaveLength(5);
});
