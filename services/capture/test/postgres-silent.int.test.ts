// main.ts against a "Postgres" that accepts connections and never answers: a token cache miss
// gets a 503 unavailable_error with Retry-After within CAPTURE_DATABASE_TIMEOUT_MS and a little,
// not a hang and not a 500, even with more concurrent misses than the pool has connections.
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import readline from 'node:readline';
import { startDevBroker, type DevBroker } from '@sett/devstack';
import { startTcpProxy, uniqueName, type TcpProxy } from '@sett/testing';

jest.setTimeout(60_000);
const TIMEOUT_MS = 1000;
let broker: DevBroker;
let silent: TcpProxy;
let child: ChildProcess | undefined;
let port: number;

beforeAll(async () => {
  broker = await startDevBroker({ partitions: 1 });
  // Accepts and never writes a byte.
  silent = await startTcpProxy();
  const pgPort = silent.port;

  child = spawn(process.execPath, ['--import', 'tsx', path.resolve(__dirname, '../src/main.ts')], {
    env: {
      ...process.env,
      CAPTURE_PORT: '0',
      DATABASE_URL: `postgres://sett@127.0.0.1:${pgPort}/sett`,
      CAPTURE_DATABASE_TIMEOUT_MS: String(TIMEOUT_MS),
      KAFKA_BROKERS: broker.bootstrap,
      LOG_FORMAT: 'json',
      LOG_LEVEL: 'info',
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('capture did not start')), 30_000);
    readline.createInterface({ input: child!.stdout! }).on('line', (line) => {
      if (line.includes('"capture ready"')) {
        clearTimeout(timer);
        resolve((JSON.parse(line) as { port: number }).port);
      }
    });
  });
}, 60_000);

afterAll(async () => {
  if (child && child.exitCode === null) {
    const exited = new Promise((r) => child!.once('exit', r));
    child.kill('SIGKILL');
    await exited;
  }
  await silent?.close();
  await broker?.stop();
});

async function postUnknownToken(token: string) {
  const started = Date.now();
  const res = await fetch(`http://127.0.0.1:${port}/e/`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ api_key: token, event: 'e', distinct_id: 'd' }),
  });
  return {
    status: res.status,
    retryAfter: res.headers.get('retry-after'),
    json: await res.json(),
    ms: Date.now() - started,
  };
}

it('answers a token cache miss with a quick 503, for more concurrent misses than the pool holds, twice', async () => {
  for (let round = 0; round < 2; round++) {
    // Capture's pool has at most 4 connections: 6 misses also wait for a connection.
    const results = await Promise.all(
      Array.from({ length: 6 }, () => postUnknownToken(`phc_${uniqueName('miss')}`)),
    );
    for (const r of results) {
      expect(r.status).toBe(503);
      expect(r.retryAfter).toBe('1');
      expect(r.json).toMatchObject({ type: 'unavailable_error', code: 'service_unavailable' });
      // The deadline plus headroom for a loaded machine (a full parallel run under load took
      // 2.2 s); without the deadline the request would hang for as long as Postgres stays silent.
      expect(r.ms).toBeLessThan(TIMEOUT_MS + 3000);
    }
  }
  // It did go to "Postgres".
  expect(silent.accepted()).toBeGreaterThan(0);
});
