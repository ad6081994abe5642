// Ingestion cannot freeze silently. A consumer whose batches hang (the fetch loop frozen: no batch
// finishes, none starts) while its partitions have lag is found by the watchdog within
// INGESTION_STALL_TIMEOUT_MS: /_ready goes 503 naming the group, sett_ingestion_consumer_stalls_total
// counts it, an error line says so, and a fresh consumer takes over and stores every event once.
// And a committed offset the broker no longer has (retention dropped the messages) is counted in
// sett_ingestion_offset_resets_total and logged as an error. Private broker per file.
import { createSilentLogger, type Logger } from '@sett/logger';
import { createKafka, TOPICS } from '@sett/kafka';
import type { IngestionWorker } from '../../src/worker';
import {
  captureMessage,
  countEvents,
  createTeam,
  metricValue,
  produce,
  setupEnv,
  startReadyServer,
  startWorker,
  waitFor,
  type Env,
} from './helpers';

jest.setTimeout(90_000);

let env: Env;
let team: { teamId: number; token: string };
const cleanup: Array<() => Promise<void>> = [];

beforeAll(async () => {
  env = await setupEnv(2);
  team = await createTeam(env.pool);
});

afterAll(async () => {
  for (const c of cleanup.reverse()) await c().catch(() => undefined);
  await env?.close();
});

/** A logger that keeps its error lines. */
function recordingLogger(): Logger & { errors: Array<{ message: string; meta?: Record<string, unknown> }> } {
  const errors: Array<{ message: string; meta?: Record<string, unknown> }> = [];
  const logger = createSilentLogger() as Logger & { errors: typeof errors };
  logger.error = (message: string, meta?: Record<string, unknown>) => void errors.push({ message, meta });
  logger.child = () => logger;
  logger.errors = errors;
  return logger;
}

it('replaces a consumer whose fetch loop froze: 503 naming the group, counted, logged, and every event stored once', async () => {
  const group = 'watchdog-live';
  const logger = recordingLogger();
  // The first batch of each partition never returns: the member stops making progress.
  const frozen = new Set<number>();
  const running = startWorker(env, {
    config: { topics: ['main'], stallTimeoutMs: 1500 },
    groupIds: { live: group, historical: 'watchdog-historical' },
    logger,
    beforeBatch: (batch) => {
      const partition = batch.parts[0]!.partition;
      if (frozen.has(partition)) return;
      frozen.add(partition);
      return new Promise<void>(() => undefined);
    },
  });
  cleanup.push(() => running.worker.stop());
  const server = await startReadyServer(running.worker, env.pool);
  cleanup.push(() => server.close());
  const check = async () => (await server.ready()).body.checks[`consumer:${group}`];
  await running.worker.start();
  await waitFor('ready', async () => (await check())?.ok === true);

  const events = Array.from({ length: 40 }, (_, i) => captureMessage(team.token, `w${i % 8}`, 'frozen'));
  await produce(env.producer, events);
  await waitFor('a frozen batch', () => frozen.size > 0);

  const stalled = await waitFor('503 naming the stall', async () => {
    const r = await server.ready();
    const c = r.body.checks[`consumer:${group}`];
    return r.status === 503 && /stalled/.test(c?.error ?? '') ? c : false;
  });
  expect(stalled?.error).toMatch(/messages behind/);
  expect(await metricValue(running.registry, 'sett_ingestion_consumer_stalls_total', { group })).toBe(1);
  expect(logger.errors.map((e) => e.message)).toContain('kafka consumer stalled; replacing it');

  await waitFor('every event stored', async () => (await countEvents(env.pool, team.teamId)) === 40, 60_000);
  await waitFor('ready again', async () => (await check())?.ok === true);
  const { rows } = await env.pool.query<{ n: string }>(
    'SELECT count(DISTINCT uuid) AS n FROM events WHERE team_id = $1',
    [team.teamId],
  );
  expect(Number(rows[0]!.n)).toBe(40);
  await running.worker.stop();
});

it('counts and logs an offset reset: the committed offset is past what the broker holds', async () => {
  const group = 'reset-live';
  // A committed offset far past the end of every partition, as if retention had dropped it.
  const setter = env.kafka.consumer({ groupId: group, sessionTimeout: 3000, heartbeatInterval: 300 });
  await setter.connect();
  await setter.subscribe({ topics: [TOPICS.main], fromBeginning: true });
  const joined = new Promise<void>((resolve) => setter.on(setter.events.GROUP_JOIN, () => resolve()));
  await setter.run({ autoCommit: false, eachBatch: async () => undefined });
  await joined;
  await setter.commitOffsets(
    [0, 1].map((partition) => ({ topic: TOPICS.main, partition, offset: '100000' })),
  );
  await setter.disconnect();

  const logger = recordingLogger();
  const ref: { worker?: IngestionWorker } = {};
  const kafka = createKafka({
    brokers: env.broker.brokers,
    clientId: 'reset-test',
    logger,
    logLevel: 'error',
    onOffsetReset: (info) => ref.worker?.noteOffsetReset(info),
  });
  const running = startWorker(env, {
    kafka,
    config: { topics: ['main'] },
    groupIds: { live: group, historical: 'reset-historical' },
  });
  ref.worker = running.worker;
  cleanup.push(() => running.worker.stop());
  await running.worker.start();

  await waitFor(
    'the reset counted',
    async () => (await metricValue(running.registry, 'sett_ingestion_offset_resets_total', { group })) > 0,
  );
  const line = logger.errors.find((e) => /offset reset/.test(e.message));
  expect(line?.meta).toMatchObject({ groupId: group, topic: TOPICS.main });
  await produce(env.producer, [captureMessage(team.token, 'after-reset', 'after reset')]);
  await waitFor('consuming after the reset', async () => {
    const { rows } = await env.pool.query(`SELECT 1 FROM events WHERE distinct_id = 'after-reset'`);
    return rows.length === 1;
  });
});
