// Ingestion heals itself and /_ready tells the truth: a consumer that crashes (a batch throwing
// an error kafkajs will not restart from) is restarted by the runner, and the broker going
// down and coming back, each show as 503 naming the consumer group and return to 200 by
// themselves, with no event lost. Private broker (fault injection acts on the whole broker).
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

const LIVE = 'faults-live';
let env: Env;
let team: { teamId: number; token: string };
let running: ReturnType<typeof startWorker> | undefined;
let server: Awaited<ReturnType<typeof startReadyServer>> | undefined;

beforeAll(async () => {
  env = await setupEnv(2);
  team = await createTeam(env.pool);
});

afterAll(async () => {
  await server?.close();
  await running?.worker.stop();
  await env?.close();
});

const liveCheck = async () => {
  const r = await server!.ready();
  return { status: r.status, check: r.body.checks[`consumer:${LIVE}`] };
};

it('restarts a crashed consumer: 503 naming the group, then 200 by itself, and the event stored', async () => {
  let crashes = 1;
  running = startWorker(env, {
    config: { topics: ['main'] },
    groupIds: { live: LIVE, historical: 'faults-historical' },
    beforeBatch: () => {
      // kafkajs treats a TypeError as unrecoverable: the crash event says restart: false.
      if (crashes-- > 0) throw new TypeError('injected: the handler blew up');
    },
  });
  server = await startReadyServer(running.worker, env.pool);
  await running.worker.start();
  await waitFor('ready', async () => (await liveCheck()).status === 200);

  const event = captureMessage(team.token, 'crash-1', 'after a crash');
  await produce(env.producer, [event]);
  const down = await waitFor('503 naming the group', async () => {
    const r = await liveCheck();
    return r.status === 503 ? r : false;
  });
  expect(down.check).toEqual({
    ok: false,
    error: expect.stringMatching(/not consuming \((restarting|starting)\)/),
  });
  await waitFor('200 again by itself', async () => (await liveCheck()).status === 200);
  await waitFor('the event stored', async () => (await countEvents(env.pool)) === 1);
  expect(await metricValue(running.registry, 'sett_ingestion_consumer_restarts_total', { group: LIVE })).toBe(
    1,
  );
});

it('is 503 while the broker is down, 200 after it is back, and loses no event', async () => {
  const before = await countEvents(env.pool);
  const first = Array.from({ length: 20 }, (_, i) => captureMessage(team.token, `b${i % 4}`, 'before'));
  await produce(env.producer, first);
  await waitFor('the first events', async () => (await countEvents(env.pool)) === before + 20);
  await waitFor('ready', async () => (await liveCheck()).status === 200);

  await env.broker.setBrokerDown(1);
  const down = await waitFor(
    '503 while the broker is down',
    async () => {
      const r = await liveCheck();
      return r.status === 503 ? r : false;
    },
    20_000,
  );
  expect(down.check?.ok).toBe(false);
  expect(down.check?.error).toMatch(/not consuming/);

  // Produced while the broker is down: the producer retries until it is back.
  const second = Array.from({ length: 20 }, (_, i) => captureMessage(team.token, `b${i % 4}`, 'during'));
  const sending = produce(env.producer, second);
  await env.broker.setBrokerUp(1);
  await sending;
  await waitFor('200 after the broker is back', async () => (await liveCheck()).status === 200, 45_000);
  await waitFor('every event, once', async () => (await countEvents(env.pool)) === before + 40, 30_000);
  const { rows } = await env.pool.query<{ n: string }>('SELECT count(DISTINCT uuid) AS n FROM events');
  expect(Number(rows[0]!.n)).toBe(before + 40);
});
