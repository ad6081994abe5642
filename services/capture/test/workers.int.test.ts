// CAPTURE_WORKERS=2: main.ts as a cluster primary with two worker processes sharing one port.
// It says "capture ready" only once both workers listen, serves events through both, and on
// SIGTERM every worker drains its in-flight request and flushes to Kafka before the primary exits 0.
import { spawn } from 'node:child_process';
import path from 'node:path';
import readline from 'node:readline';
import type { DevBroker } from '@sett/devstack';
import { createKafka, TOPICS } from '@sett/kafka';
import { uniqueName, type TestDatabase } from '@sett/testing';
import { postInFlight, startProcessFixture } from './helpers';

jest.setTimeout(60_000);
let broker: DevBroker;
let db: TestDatabase;
let token: string;
let fixture: Awaited<ReturnType<typeof startProcessFixture>> | undefined;

beforeAll(async () => {
  fixture = await startProcessFixture();
  ({ broker, db, token } = fixture);
}, 60_000);
afterAll(async () => {
  await fixture?.stop();
});

it('runs two workers on one port, serves through both and drains both on SIGTERM', async () => {
  const child = spawn(process.execPath, ['--import', 'tsx', path.resolve(__dirname, '../src/main.ts')], {
    env: {
      ...process.env,
      CAPTURE_PORT: '0',
      CAPTURE_WORKERS: '2',
      DATABASE_URL: db.url,
      KAFKA_BROKERS: broker.bootstrap,
      KAFKA_PRODUCER_LINGER_MS: '800',
      LOG_FORMAT: 'json',
      LOG_LEVEL: 'info',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  const workerPids = new Set<number>();
  try {
    // The primary's ready line and the workers' own lines come from different processes, in no
    // fixed order on the shared pipe: wait for all three.
    const port = await new Promise<number>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('capture did not start')), 30_000);
      let ready: number | undefined;
      readline.createInterface({ input: child.stdout! }).on('line', (line) => {
        if (line.includes('"capture worker ready"'))
          workerPids.add((JSON.parse(line) as { pid: number }).pid);
        if (line.includes('"capture ready"')) ready = (JSON.parse(line) as { port: number }).port;
        if (ready !== undefined && workerPids.size === 2) {
          clearTimeout(timer);
          resolve(ready);
        }
      });
    });
    expect(workerPids.size).toBe(2);

    const id = uniqueName('wk');
    const post = (event: string) =>
      fetch(`http://127.0.0.1:${port}/e/`, {
        method: 'POST',
        // A new connection per request, so the primary hands them to both workers.
        headers: { 'content-type': 'application/json', connection: 'close' },
        body: JSON.stringify({ api_key: token, event, distinct_id: id }),
      });
    const statuses = await Promise.all(
      Array.from({ length: 20 }, (_, i) => post(`e${i}`).then((r) => r.status)),
    );
    expect(statuses).toEqual(Array(20).fill(200));

    // Once a worker has the request in hand (100 Continue, body written), the event is on its
    // way into that worker's 800 ms linger window: SIGTERM must not lose it.
    const pending = await postInFlight(
      `http://127.0.0.1:${port}/e/`,
      JSON.stringify({ api_key: token, event: 'drained', distinct_id: id }),
    );
    child.kill('SIGTERM');
    expect(await pending.response).toBe(200);
    expect(await exited).toBe(0);

    const kafka = createKafka({
      brokers: broker.brokers,
      clientId: 'workers-test',
      logLevel: 'nothing',
    });
    const consumer = kafka.consumer({
      groupId: uniqueName('wk'),
      sessionTimeout: 3000,
      heartbeatInterval: 300,
      maxWaitTimeInMs: 200,
    });
    await consumer.connect();
    await consumer.subscribe({ topics: [TOPICS.main], fromBeginning: true });
    const events = new Set<string>();
    await new Promise<void>((resolve) => {
      void consumer.run({
        eachMessage: async ({ message }) => {
          const value = JSON.parse(message.value!.toString()) as { event: string; distinct_id: string };
          if (value.distinct_id === id) events.add(value.event);
          if (events.size === 21) resolve();
        },
      });
    });
    expect(events.has('drained')).toBe(true);
    await consumer.disconnect();
  } finally {
    if (child.exitCode === null) child.kill('SIGKILL');
  }
});
