// `pnpm bench capture-handler`: capture's own per-event work, in process and without HTTP or
// Kafka: createCaptureHandler (the core of every capture request) runs on prepared request
// objects with a token resolver that answers at once and a producer that acknowledges at once,
// over the same 100-event batches of ~400-byte events as `pnpm bench capture`. What remains is
// decoding, type checks, the depth check, building each message, encoding it, keying and
// routing. Baseline in the same run: JSON.parse of the same bodies (the least any server does).
// Printed: µs per event for each, and the ratio.
import { Readable } from 'node:stream';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { randomUUID } from 'node:crypto';
import { createRequire } from 'node:module';
import path from 'node:path';
import { createLogger } from '@sett/logger';
import type { TokenResolver } from '@sett/cache';
import { createCaptureHandler } from '../services/capture/src/capture/capture-handler';
import { createCaptureMetrics } from '../services/capture/src/capture/capture-metrics';
import { createKeyLimiter } from '../services/capture/src/routing/token-bucket';
import { ratioLine } from './lib';

// prom-client as capture resolves it (the workspace root does not depend on it).
const { Registry } = createRequire(path.join(__dirname, '../services/capture/package.json'))(
  'prom-client',
) as { Registry: new () => Parameters<typeof createCaptureMetrics>[0] };

const BATCH_SIZE = 100;
const BODIES = 64;
const ROUNDS = 300;

const PAGES = ['/', '/pricing', '/docs/getting-started', '/blog/how-we-ship', '/signup', '/settings/billing'];
const BROWSERS = ['Chrome', 'Firefox', 'Safari', 'Edge'];

/** The capture bench's event: a browser-SDK event of ~400 bytes. */
function event(n: number): Record<string, unknown> {
  return {
    event: n % 5 === 0 ? 'signed_up' : '$pageview',
    distinct_id: `user-${Math.floor(Math.random() * 20_000)}`,
    uuid: randomUUID(),
    timestamp: new Date(Date.now() - (n % 60) * 1000).toISOString(),
    properties: {
      $current_url: `https://app.example.com${PAGES[n % PAGES.length]}?ref=${n % 17}`,
      $browser: BROWSERS[n % BROWSERS.length],
      $browser_version: 120 + (n % 8),
      $os: n % 2 ? 'Mac OS X' : 'Windows',
      $screen_width: 1440,
      $screen_height: 900,
      $lib: 'web',
      $lib_version: '1.200.0',
      $session_id: `01900000-0000-7000-8000-${String(n % 1000).padStart(12, '0')}`,
      plan: n % 3 ? 'free' : 'pro',
    },
  };
}

function request(body: Buffer): IncomingMessage {
  const req = Readable.from([body]) as unknown as IncomingMessage;
  Object.assign(req, {
    url: '/batch/',
    headers: { 'content-type': 'application/json', 'content-length': String(body.length) },
    socket: { remoteAddress: '127.0.0.1' },
  });
  return req;
}

const response = (): ServerResponse =>
  ({ statusCode: 0, setHeader: () => undefined, end: () => undefined }) as unknown as ServerResponse;

export async function run(): Promise<boolean> {
  const token = `phc_bench${randomUUID().replace(/-/g, '')}`;
  let n = 0;
  const bodies = Array.from({ length: BODIES }, () =>
    Buffer.from(
      JSON.stringify({ api_key: token, batch: Array.from({ length: BATCH_SIZE }, () => event(n++)) }),
    ),
  );
  const tokenResolver = {
    resolve: async () => ({ teamId: 1, organizationId: 'o' }),
  } as unknown as TokenResolver;
  let produced = 0;
  const handler = createCaptureHandler({
    maxBodyBytes: 20 * 1024 * 1024,
    maxInflateRatio: 5,
    maxEventBytes: 1_000_000 - 1024,
    tokenResolver,
    producer: {
      send: async (_topic, messages) => {
        produced += messages.length;
      },
    },
    limiter: createKeyLimiter({ ratePerSecond: 100, burst: 1000 }),
    metrics: createCaptureMetrics(new Registry()),
    logger: createLogger({ level: 'error', format: 'json', service: 'bench' }),
  });

  const events = BODIES * BATCH_SIZE * ROUNDS;
  const handle = async () => {
    for (let r = 0; r < ROUNDS; r++)
      for (const b of bodies) await handler(request(b), response(), { engage: false });
  };
  const parse = async () => {
    for (let r = 0; r < ROUNDS; r++)
      for (const b of bodies) {
        // The same request plumbing, then only JSON.parse.
        const req = request(b);
        const chunks: Buffer[] = [];
        for await (const c of req) chunks.push(c as Buffer);
        JSON.parse(Buffer.concat(chunks).toString('utf8'));
      }
  };
  const time = async (fn: () => Promise<void>) => {
    const t0 = process.hrtime.bigint();
    await fn();
    return Number(process.hrtime.bigint() - t0) / 1000 / events;
  };
  await handle(); // warm-up
  await parse();
  const parseUs = await time(parse);
  const handlerUs = await time(handle);
  const avg = bodies.reduce((s, b) => s + b.length, 0) / (BODIES * BATCH_SIZE);
  process.stdout.write(
    `${events.toLocaleString('en-US')} events of ~${Math.round(avg)} B in batches of ${BATCH_SIZE}\n`,
  );
  process.stdout.write(`JSON.parse only: ${parseUs.toFixed(2)} µs per event\n`);
  process.stdout.write(`capture handler (no HTTP, no Kafka): ${handlerUs.toFixed(2)} µs per event\n`);
  process.stdout.write(`${ratioLine('handler vs parse only', 1 / handlerUs, 1 / parseUs, 'events/µs')}\n`);
  if (produced !== events * 2) process.stdout.write(`(produced ${produced} messages)\n`);
  return true;
}
