// main.ts as a process: on SIGTERM it stops accepting, finishes the request in flight (whose
// events are still waiting in the producer's linger window), flushes to Kafka and exits 0.
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

it('drains the in-flight request, flushes it to Kafka and exits 0 on SIGTERM', async () => {
  const child = spawn(process.execPath, ['--import', 'tsx', path.resolve(__dirname, '../src/main.ts')], {
    env: {
      ...process.env,
      CAPTURE_PORT: '0',
      DATABASE_URL: db.url,
      KAFKA_BROKERS: broker.bootstrap,
      KAFKA_PRODUCER_LINGER_MS: '800',
      LOG_FORMAT: 'json',
      LOG_LEVEL: 'info',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  try {
    const port = await new Promise<number>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('capture did not start')), 30_000);
      readline.createInterface({ input: child.stdout! }).on('line', (line) => {
        if (line.includes('"capture ready"')) {
          clearTimeout(timer);
          resolve((JSON.parse(line) as { port: number }).port);
        }
      });
    });
    const id = uniqueName('drain');
    // Once the server has the request in hand (100 Continue, body written), the event is on its
    // way into the producer's 800 ms linger window: SIGTERM must not lose it.
    const pending = await postInFlight(
      `http://127.0.0.1:${port}/e/`,
      JSON.stringify({ api_key: token, event: 'drained', distinct_id: id }),
    );
    child.kill('SIGTERM');
    expect(await pending.response).toBe(200);
    expect(await exited).toBe(0);

    const kafka = createKafka({
      brokers: broker.brokers,
      clientId: 'sigterm-test',
      logLevel: 'nothing',
    });
    const consumer = kafka.consumer({
      groupId: uniqueName('sig'),
      sessionTimeout: 3000,
      heartbeatInterval: 300,
      maxWaitTimeInMs: 200,
    });
    await consumer.connect();
    await consumer.subscribe({ topics: [TOPICS.main], fromBeginning: true });
    const found = new Promise<string>((resolve) => {
      void consumer.run({ eachMessage: async ({ message }) => resolve(message.key?.toString() ?? '') });
    });
    expect(await found).toBe(`${token}:${id}`);
    await consumer.disconnect();
  } finally {
    if (child.exitCode === null) child.kill('SIGKILL');
  }
});
