// Forty gzip bombs of valid JSON at once (92 KB of gzip, 95 MB of JSON each: one event whose
// property is a 95 MB string) against the real capture process, its decompressed cap raised to
// hold them (CAPTURE_MAX_INFLATE_RATIO=5, the old default): the decompression budget keeps the
// process' peak RSS (VmHWM) under 1 GB, bombs past the budget get 503 with Retry-After before
// they are inflated, and ordinary events sent meanwhile are all accepted.
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import readline from 'node:readline';
import { gzipSync } from 'node:zlib';
import { uniqueName } from '@sett/testing';
import { startProcessFixture } from './helpers';

jest.setTimeout(180_000);

const BOMBS = 40;
const BOMB_JSON_BYTES = 95 * 1024 * 1024;
const ONE_GB_KB = 1024 * 1024;

let fixture: Awaited<ReturnType<typeof startProcessFixture>>;
let child: ChildProcess;
let port: number;

beforeAll(async () => {
  fixture = await startProcessFixture();
  child = spawn(process.execPath, ['--import', 'tsx', path.resolve(__dirname, '../src/main.ts')], {
    env: {
      ...process.env,
      CAPTURE_PORT: '0',
      CAPTURE_WORKERS: '1',
      CAPTURE_MAX_INFLATE_RATIO: '5',
      DATABASE_URL: fixture.db.url,
      KAFKA_BROKERS: fixture.broker.bootstrap,
      LOG_FORMAT: 'json',
      LOG_LEVEL: 'info',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('capture did not start')), 60_000);
    readline.createInterface({ input: child.stdout! }).on('line', (line) => {
      if (!line.includes('"capture ready"')) return;
      clearTimeout(timer);
      resolve((JSON.parse(line) as { port: number }).port);
    });
  });
}, 90_000);

afterAll(async () => {
  if (child && child.exitCode === null) {
    const gone = new Promise((r) => child.once('exit', r));
    child.kill('SIGKILL');
    await gone;
  }
  await fixture?.stop();
});

/** Peak resident set of the capture process so far, in kB. */
function peakRssKb(): number {
  const status = readFileSync(`/proc/${child.pid}/status`, 'utf8');
  return Number(/VmHWM:\s+(\d+) kB/.exec(status)![1]);
}

it('keeps RSS under 1 GB and ordinary events flowing under 40 concurrent gzip bombs', async () => {
  const head = `{"api_key":${JSON.stringify(fixture.token)},"event":"bomb","distinct_id":"b","properties":{"p":"`;
  const tail = '"}}';
  const bomb = gzipSync(
    Buffer.concat([
      Buffer.from(head),
      Buffer.alloc(BOMB_JSON_BYTES - head.length - tail.length, 'a'),
      Buffer.from(tail),
    ]),
    { level: 9 },
  );
  expect(bomb.length).toBeLessThan(100 * 1024);
  const url = `http://127.0.0.1:${port}/e/`;
  const before = peakRssKb();

  const bombs = Array.from({ length: BOMBS }, () =>
    fetch(url, { method: 'POST', headers: { 'content-encoding': 'gzip' }, body: bomb }).then(async (r) => ({
      status: r.status,
      retryAfter: r.headers.get('retry-after'),
      body: await r.text(),
    })),
  );
  // Ordinary events, one after another while the bombs are in flight.
  let done = false;
  const all = Promise.all(bombs).finally(() => (done = true));
  const ordinary: number[] = [];
  while (!done || ordinary.length < 5) {
    const res = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ api_key: fixture.token, event: 'ordinary', distinct_id: uniqueName('o') }),
    });
    ordinary.push(res.status);
    await res.text();
  }
  const answers = await all;
  const peak = peakRssKb();

  const statuses = answers.map((a) => a.status);
  // Each bomb is refused: 413 once inflated and parsed (the event is over the Kafka limit), or
  // 503 with Retry-After when the budget was spent, before any inflating.
  expect(statuses.every((s) => s === 413 || s === 503)).toBe(true);
  expect(statuses.filter((s) => s === 503).length).toBeGreaterThan(0);
  for (const a of answers.filter((x) => x.status === 503)) {
    expect(a.retryAfter).toMatch(/^\d+$/);
    expect(JSON.parse(a.body)).toMatchObject({
      type: 'unavailable_error',
      detail: expect.stringMatching(/decompress/),
    });
  }
  expect(ordinary.every((s) => s === 200)).toBe(true);
  process.stdout.write(
    `bombs: ${JSON.stringify(statuses)} ordinary: ${ordinary.length} peak RSS ${peak} kB (before ${before} kB)\n`,
  );
  expect({ before, peak, underOneGb: peak < ONE_GB_KB }).toMatchObject({ underOneGb: true });
});
