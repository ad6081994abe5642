// Postgres that accepts connections and never answers (a proxy that stops forwarding, as a
// hung server or a black-holed network does): with a short statement timeout every attempt
// fails as an infrastructure error, so the worker retries without committing offsets and
// without dead-lettering, and stores everything once Postgres answers again.
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
let pool: Pool;
let proxy: TcpProxy;
let running: ReturnType<typeof startWorker> | undefined;

beforeAll(async () => {
  env = await setupEnv(2);
  const url = new URL(env.db.url);
  proxy = await startTcpProxy({ host: url.hostname, port: Number(url.port || 5432) });
  url.port = String(proxy.port);
  pool = createPgPool({
    databaseUrl: url.toString(),
    max: 4,
    // Ingestion's pool gets these from config (INGESTION_DATABASE_TIMEOUT_MS, 60 s by default).
    timeouts: { connectTimeoutMs: 500, statementTimeoutMs: 300, idleInTransactionTimeoutMs: 5000 },
  });
  pool.on('error', () => undefined);
});

afterAll(async () => {
  await running?.worker.stop();
  await pool?.end().catch(() => undefined);
  await proxy?.close();
  await env?.close();
});

it('retries without committing while Postgres never answers, then stores everything once', async () => {
  const team = await createTeam(env.pool);
  running = startWorker(env, { pool });
  await running.worker.start();
  await produce(env.producer, [captureMessage(team.token, 'h0', 'warm-up')]);
  await waitFor('the warm-up event', async () => (await countEvents(env.pool)) === 1);

  proxy.silence();
  const events = Array.from({ length: 30 }, (_, i) =>
    captureMessage(team.token, `h${i % 3}`, 'while hung', { $set: { i } }),
  );
  await produce(env.producer, events);
  await waitFor(
    'retries of timed-out attempts',
    async () =>
      (await metricValue(running!.registry, 'sett_ingestion_batch_retries_total', { stage: 'postgres' })) >=
      3,
  );
  expect(running.worker.problems().join()).toMatch(/postgres: .*(timeout|Connection terminated)/i);
  expect(await countEvents(env.pool)).toBe(1);
  const lag = await running.worker.lag();
  expect(lag.reduce((s, l) => s + l.lag, 0)).toBe(events.length); // nothing committed
  expect(await metricValue(running.registry, 'sett_ingestion_dead_letters_total')).toBe(0);

  proxy.forward();
  await waitFor('every event after Postgres answers', async () => (await countEvents(env.pool)) === 31);
  await waitFor(
    'ready again and committed',
    async () =>
      running!.worker.problems().length === 0 && (await running!.worker.lag()).every((l) => l.lag === 0),
  );
  expect(await metricValue(running.registry, 'sett_ingestion_dead_letters_total')).toBe(0);
  const { rows } = await env.pool.query<{ n: string }>('SELECT count(DISTINCT uuid) AS n FROM events');
  expect(Number(rows[0]!.n)).toBe(31);
});
