// A historical backfill does not delay live events: 100k historical events are queued first,
// and live events produced after the backfill started draining are all stored while the
// historical consumer group still has work left (ordering of completion, not speed).
import { TOPICS, createKafkajsProducer, encodeCaptureMessage } from '@sett/kafka';
import {
  captureMessage,
  countEvents,
  createTeam,
  produce,
  setupEnv,
  startWorker,
  waitFor,
  type Env,
} from './helpers';

jest.setTimeout(120_000);

const HISTORICAL = 100_000;
let env: Env;
let team: { teamId: number; token: string };
let running: ReturnType<typeof startWorker> | undefined;

beforeAll(async () => {
  // 16 partitions: 100k events stay far below the dev broker's ~5 MB per partition.
  env = await setupEnv(16);
  team = await createTeam(env.pool);
});

afterAll(async () => {
  await running?.worker.stop();
  await env?.close();
});

it('live events land while a 100k historical backfill is still draining', async () => {
  // All 50 sends are queued at once and each one's timer starts when queued: on a loaded machine
  // the last can wait longer than the 10 s default behind the others. This test is about
  // consumption, not produce latency.
  const producer = createKafkajsProducer({
    kafka: env.kafka,
    lingerMs: 5,
    maxBatchMessages: 2000,
    sendTimeoutMs: 60_000,
  });
  await producer.connect();
  const sends: Array<Promise<void>> = [];
  for (let i = 0; i < HISTORICAL; i += 2000) {
    const chunk = Array.from({ length: 2000 }, (_, k) => {
      const n = i + k;
      return captureMessage(
        team.token,
        `hist-${n % 2000}`,
        'imported',
        { $set: { n } },
        {
          historical_migration: true,
          timestamp: '2020-06-01T00:00:00.000Z',
          sent_at: '2024-06-01T00:00:00.000Z',
        },
      );
    });
    sends.push(
      producer.send(
        TOPICS.historical,
        chunk.map((m) => ({ key: `${m.token}:${m.distinct_id}`, value: encodeCaptureMessage(m) })),
      ),
    );
  }
  await Promise.all(sends);
  await producer.disconnect();

  running = startWorker(env, { config: { topics: ['main', 'overflow', 'historical'] } });
  await running.worker.start();
  await waitFor('the backfill to start draining', async () => (await countEvents(env.pool)) > 0, 60_000);

  const live = Array.from({ length: 200 }, (_, i) =>
    captureMessage(team.token, `live-${i % 20}`, '$pageview', { $current_url: `https://x.test/${i}` }),
  );
  await produce(env.producer, live);
  await waitFor(
    'every live event',
    async () => {
      const { rows } = await env.pool.query<{ n: string }>(
        `SELECT count(*) AS n FROM events WHERE distinct_id LIKE 'live-%'`,
      );
      return Number(rows[0]!.n) === live.length;
    },
    60_000,
  );

  const historicalStored = (
    await env.pool.query<{ n: string }>(`SELECT count(*) AS n FROM events WHERE event = 'imported'`)
  ).rows[0]!.n;
  const historicalLag = (await running.worker.lag())
    .filter((l) => l.topic === TOPICS.historical)
    .reduce((s, l) => s + l.lag, 0);
  expect(Number(historicalStored)).toBeLessThan(HISTORICAL);
  expect(historicalLag).toBeGreaterThan(0);

  // Historical events keep their own timestamps (no clock-skew correction from sent_at).
  const { rows } = await env.pool.query(`SELECT DISTINCT timestamp FROM events WHERE event = 'imported'`);
  expect(rows.map((r) => (r.timestamp as Date).toISOString())).toEqual(['2020-06-01T00:00:00.000Z']);
});
