// `pnpm bench e2e`: the path users run, from an SDK's HTTP request to the row in Postgres. Real
// capture and ingestion processes (their own main.ts) over the development broker (48
// partitions) and a fresh database, driven over HTTP:
// - flat out with /batch/ clients (8 clients, 100 events a request), with persons and without:
//   events/s from the first request to the last stored row, the live batch size ingestion saw,
//   and ingestion's and capture's CPU meanwhile. The same events through `pnpm bench
//   ingestion`'s pre-filled path (a topic filled beforehand in large record batches, then
//   drained), in the same run, give the ratio;
// - flat out with single-event clients (/i/v0/e/, 64 connections), events/s end to end;
// - at a fixed rate (5 and 500 events/s from single-event clients, 5,000 events/s from /batch/
//   clients): the time from capture's 200 to the stored row, p50 and p99, found by polling
//   Postgres every 20 ms for the events sent (so up to 20 ms late; at most about 100 events a
//   second are followed, spread evenly, so the polling does not load Postgres), and the live
//   batch size.
// - ingestion alone on live-shaped data: capture fills the topic first (ingestion stopped), in
//   the small record batches live traffic leaves, then ingestion drains it, timed as the
//   pre-filled path is. This is what ingestion does whenever it has lag.
// Targets: live >= 0.8 of the pre-filled path, with and without persons (end to end and on
// live-shaped data: end to end, capture, the load generator and ingestion share two cores, and
// the pre-filled path has them to itself); ingestion >= 90% of a core while it has lag; at 5
// events/s the p99 from 200 to stored <= 500 ms; live batches in the hundreds under load.
// E2E_EVENTS sets the flat-out count (default 200,000, the pre-filled path's).
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { endPool } from '@sett/db';
import { startDevBroker } from '@sett/devstack';
import { N, PARTITIONS, TOKEN, drain, findPort, freshDatabase, metricSum, workload } from './ingestion.bench';
import { fmt, startCapture, startChild, type ChildServer } from './lib';

const FLAT_EVENTS = Number(process.env.E2E_EVENTS || N);
const BATCH_CLIENTS = 8;
const BATCH_SIZE = 100;
const SINGLE_CLIENTS = 64;
const SINGLE_EVENTS = 20_000;
const RATE_SECONDS = Number(process.env.E2E_RATE_SECONDS || 8);
const repoRoot = path.resolve(__dirname, '..');

/** CPU seconds (user + system) a process has used so far. */
function cpuSeconds(pid: number): number {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

interface Stack {
  capture: ChildServer & { port: number };
  ingestion: ChildServer;
  ingestionPort: number;
  pool: pg.Pool;
  teamId: number;
  stop(): Promise<void>;
}

/** Capture, and (unless `deferIngestion`) ingestion, over a fresh broker and database. With
 * `deferIngestion`, ingestion starts when `startIngestion` is called. */
async function startStack(
  label: string,
  deferIngestion = false,
): Promise<Stack & { startIngestion(): Promise<void> }> {
  const [broker, db] = await Promise.all([startDevBroker({ partitions: PARTITIONS }), freshDatabase(label)]);
  const capture = await startCapture(db.url, broker.bootstrap);
  const pool = new pg.Pool({ connectionString: db.url, max: 2 });
  const teamId = (await pool.query<{ id: number }>('SELECT id FROM teams WHERE api_token = $1', [TOKEN]))
    .rows[0]!.id;
  const stack = {
    capture,
    pool,
    teamId,
    ingestion: undefined as unknown as ChildServer,
    ingestionPort: 0,
    async startIngestion() {
      stack.ingestion = await startChild(
        path.join(repoRoot, 'services/ingestion/src/main.ts'),
        {
          KAFKA_BROKERS: broker.bootstrap,
          DATABASE_URL: db.url,
          INGESTION_PORT: '0',
          INGESTION_TOPICS: 'main,overflow',
          INGESTION_SESSION_TIMEOUT_MS: '6000',
          INGESTION_HEARTBEAT_INTERVAL_MS: '500',
          LOG_FORMAT: 'json',
          LOG_LEVEL: 'info',
          // SETT_INGESTION_CPU_PROFILE_DIR profiles ingestion (bench/cpu-profile-preload.mjs).
          ...(process.env.SETT_INGESTION_CPU_PROFILE_DIR
            ? {
                NODE_OPTIONS: `--import ${path.join(__dirname, 'cpu-profile-preload.mjs')}`,
                SETT_CPU_PROFILE_DIR: process.env.SETT_INGESTION_CPU_PROFILE_DIR,
              }
            : {}),
        },
        /ingestion consumers started/,
      );
      stack.ingestionPort = await findPort(stack.ingestion.process.pid!);
      // The consumer group is joined (its first batch may take the join's few seconds otherwise).
      await waitForReady(stack.ingestionPort);
    },
    async stop() {
      await Promise.all([capture.stop(), stack.ingestion?.stop()]);
      await endPool(pool);
      await broker.stop();
      await db.drop();
    },
  };
  if (!deferIngestion) await stack.startIngestion();
  return stack;
}

/**
 * Ingestion alone on live-shaped data: capture fills the topic first (ingestion stopped), in
 * the small record batches live traffic makes, then ingestion drains it. The same measure as
 * the pre-filled path, on the data live traffic leaves.
 */
async function liveShapedDrain(
  personless: boolean,
): Promise<{ rate: number; avgBatch: number; cpu: number }> {
  const stack = await startStack(`e2e_shaped_${personless ? 'personless' : 'persons'}`, true);
  try {
    const events = sdkEvents(personless, FLAT_EVENTS);
    let next = 0;
    await Promise.all(
      Array.from({ length: BATCH_CLIENTS }, async () => {
        for (;;) {
          const from = next;
          next += BATCH_SIZE;
          if (from >= events.length) return;
          await batchSender(stack)(events.slice(from, from + BATCH_SIZE));
        }
      }),
    );
    await stack.startIngestion();
    const pid = stack.ingestion.process.pid!;
    let t0 = 0;
    let c0 = 0;
    let cpu0 = 0;
    const deadline = Date.now() + 300_000;
    for (;;) {
      const { stored } = await ingestionMetrics(stack);
      if (!t0 && stored > 0) {
        t0 = Date.now();
        c0 = stored;
        cpu0 = cpuSeconds(pid);
      }
      if (stored >= events.length) break;
      if (Date.now() > deadline) throw new Error(`live-shaped drain stuck at ${stored}`);
      await new Promise((r) => setTimeout(r, 25));
    }
    const seconds = (Date.now() - t0) / 1000;
    const after = await ingestionMetrics(stack);
    return {
      rate: (events.length - c0) / seconds,
      avgBatch: after.batchEvents / Math.max(1, after.batches),
      cpu: (cpuSeconds(pid) - cpu0) / seconds,
    };
  } finally {
    await stack.stop();
  }
}

async function waitForReady(port: number): Promise<void> {
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    const ok = await fetch(`http://127.0.0.1:${port}/_ready`)
      .then((r) => r.ok)
      .catch(() => false);
    if (ok) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error('ingestion never became ready');
}

async function ingestionMetrics(stack: Stack) {
  const text = await (await fetch(`http://127.0.0.1:${stack.ingestionPort}/_metrics`)).text();
  return {
    stored: metricSum(text, 'sett_ingestion_events_total'),
    batches: metricSum(text, 'sett_ingestion_batch_size_count'),
    batchEvents: metricSum(text, 'sett_ingestion_batch_size_sum'),
  };
}

/** The workload's messages as an SDK sends them to capture. */
function sdkEvents(personless: boolean, count: number) {
  const all = workload(personless);
  const out = [];
  for (let i = 0; i < count; i++) {
    const m = all[i % all.length]!;
    out.push({
      event: m.event,
      distinct_id: m.distinct_id,
      properties: m.properties,
      timestamp: m.timestamp,
      uuid: i < all.length ? m.uuid : randomUUID(),
    });
  }
  return out;
}

async function post(port: number, path: string, body: unknown): Promise<void> {
  const res = await fetch(`http://127.0.0.1:${port}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  await res.arrayBuffer();
  if (res.status !== 200) throw new Error(`capture ${path} answered ${res.status}`);
}

async function waitStored(stack: Stack, target: number, timeoutMs: number): Promise<number> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const { stored } = await ingestionMetrics(stack);
    if (stored >= target) return Date.now();
    if (Date.now() > deadline)
      throw new Error(`only ${stored} of ${target} events stored in ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

interface FlatResult {
  rate: number;
  ackRate: number;
  avgBatch: number;
  ingestionCpu: number;
  captureCpu: number;
}

/** Sends `events` flat out through `send` from `clients` loops; events/s to the last stored row. */
async function flatOut(
  stack: Stack,
  events: ReturnType<typeof sdkEvents>,
  clients: number,
  chunk: number,
  send: (slice: typeof events) => Promise<void>,
): Promise<FlatResult> {
  const before = await ingestionMetrics(stack);
  const ingestionPid = stack.ingestion.process.pid!;
  const capturePid = stack.capture.process.pid!;
  const cpu0 = [cpuSeconds(ingestionPid), cpuSeconds(capturePid)];
  const started = Date.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: clients }, async () => {
      for (;;) {
        const from = next;
        next += chunk;
        if (from >= events.length) return;
        await send(events.slice(from, from + chunk));
      }
    }),
  );
  const acked = Date.now();
  const stored = await waitStored(stack, before.stored + events.length, 600_000);
  const cpu1 = [cpuSeconds(ingestionPid), cpuSeconds(capturePid)];
  const after = await ingestionMetrics(stack);
  const seconds = (stored - started) / 1000;
  return {
    rate: events.length / seconds,
    ackRate: events.length / ((acked - started) / 1000),
    avgBatch: (after.batchEvents - before.batchEvents) / Math.max(1, after.batches - before.batches),
    ingestionCpu: (cpu1[0]! - cpu0[0]!) / seconds,
    captureCpu: (cpu1[1]! - cpu0[1]!) / seconds,
  };
}

const batchSender = (stack: Stack) => (slice: ReturnType<typeof sdkEvents>) =>
  post(stack.capture.port, '/batch/', { api_key: TOKEN, batch: slice });

const singleSender = (stack: Stack) => async (slice: ReturnType<typeof sdkEvents>) => {
  for (const e of slice) await post(stack.capture.port, '/i/v0/e/', { api_key: TOKEN, ...e });
};

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(sorted.length * p) - 1))] ?? NaN;
}

/**
 * Events at `rate` a second for RATE_SECONDS (single events, or /batch/ requests of 100), each
 * timed from capture's 200 to the moment a poll of Postgres finds it.
 */
async function atRate(stack: Stack, rate: number, batched: boolean) {
  const events = sdkEvents(false, rate * RATE_SECONDS).map((e) => ({ ...e, uuid: randomUUID() }));
  const acked = new Map<string, number>();
  const latencies: number[] = [];
  const before = await ingestionMetrics(stack);
  let sending = true;
  const poller = (async () => {
    while (sending || acked.size > 0) {
      const pending = [...acked.keys()];
      if (pending.length > 0) {
        const { rows } = await stack.pool.query<{ uuid: string }>(
          'SELECT uuid::text FROM events WHERE team_id = $1 AND uuid = ANY($2::uuid[])',
          [stack.teamId, pending],
        );
        const now = performance.now();
        for (const r of rows) {
          const at = acked.get(r.uuid);
          if (at !== undefined) {
            latencies.push(now - at);
            acked.delete(r.uuid);
          }
        }
      }
      await new Promise((r) => setTimeout(r, 20));
    }
  })();
  const perRequest = batched ? BATCH_SIZE : 1;
  // About 100 followed events a second: every event at 5/s, one in five at 500/s, the last of
  // each /batch/ request at 5,000/s.
  const followEvery = Math.max(1, Math.round(rate / perRequest / 100));
  const requests = Math.ceil(events.length / perRequest);
  const intervalMs = (1000 * perRequest) / rate;
  const t0 = performance.now();
  const inFlight: Promise<void>[] = [];
  for (let i = 0; i < requests; i++) {
    const due = t0 + i * intervalMs;
    const wait = due - performance.now();
    if (wait > 1) await new Promise((r) => setTimeout(r, wait));
    const slice = events.slice(i * perRequest, (i + 1) * perRequest);
    inFlight.push(
      (batched
        ? post(stack.capture.port, '/batch/', { api_key: TOKEN, batch: slice })
        : post(stack.capture.port, '/i/v0/e/', { api_key: TOKEN, ...slice[0]! })
      ).then(() => {
        if (i % followEvery === 0) acked.set(slice[slice.length - 1]!.uuid, performance.now());
      }),
    );
  }
  await Promise.all(inFlight);
  sending = false;
  const deadline = Date.now() + 60_000;
  while (acked.size > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  if (acked.size > 0) throw new Error(`${acked.size} events sent at ${rate}/s were not stored within 60 s`);
  await poller;
  const after = await ingestionMetrics(stack);
  return {
    p50: percentile(latencies, 0.5),
    p99: percentile(latencies, 0.99),
    max: Math.max(...latencies),
    avgBatch: (after.batchEvents - before.batchEvents) / Math.max(1, after.batches - before.batches),
    achieved: events.length / ((performance.now() - t0) / 1000),
  };
}

export async function run(): Promise<boolean> {
  if (process.env.E2E_ONLY === 'shaped') {
    const r = await liveShapedDrain(process.env.E2E_PERSONLESS === '1');
    process.stdout.write(
      `live-shaped drain: ${fmt(r.rate)} events/s, batch ${fmt(r.avgBatch)}, cpu ${(r.cpu * 100).toFixed(0)}%\n`,
    );
    return true;
  }
  const rows: string[] = [];
  const checks: Array<[string, boolean]> = [];
  for (const personless of [false, true]) {
    const label = personless ? 'without persons' : 'with persons';
    const stack = await startStack(`e2e_${personless ? 'personless' : 'persons'}`);
    let live: FlatResult;
    try {
      live = await flatOut(
        stack,
        sdkEvents(personless, FLAT_EVENTS),
        BATCH_CLIENTS,
        BATCH_SIZE,
        batchSender(stack),
      );
    } finally {
      await stack.stop();
    }
    const shaped = await liveShapedDrain(personless);
    const prefilled = await drain(`e2e_prefilled_${personless ? 'personless' : 'persons'}`, personless);
    rows.push(
      `| end to end, /batch/ flat out, ${label} | ${fmt(live.rate)} | ${fmt(prefilled.rate)} | ${(live.rate / prefilled.rate).toFixed(2)} | ${fmt(live.avgBatch)} | ${(live.ingestionCpu * 100).toFixed(0)}% | ${(live.captureCpu * 100).toFixed(0)}% | capture acked ${fmt(live.ackRate)}/s |`,
      `| ingestion on live-shaped data, ${label} | ${fmt(shaped.rate)} | ${fmt(prefilled.rate)} | ${(shaped.rate / prefilled.rate).toFixed(2)} | ${fmt(shaped.avgBatch)} | ${(shaped.cpu * 100).toFixed(0)}% | | capture filled the topic first |`,
    );
    checks.push([
      `ingestion on live-shaped data ${label} >= 0.8 of the pre-filled path (${(shaped.rate / prefilled.rate).toFixed(2)})`,
      shaped.rate >= 0.8 * prefilled.rate,
    ]);
    checks.push([
      `end to end ${label} >= 0.8 of the pre-filled path (${(live.rate / prefilled.rate).toFixed(2)}; capture shares the cores)`,
      live.rate >= 0.8 * prefilled.rate,
    ]);
    checks.push([
      `ingestion busy while it drains live-shaped data, ${label} (${(shaped.cpu * 100).toFixed(0)}% of a core)`,
      shaped.cpu >= 0.9,
    ]);
    checks.push([`live batches in the hundreds, ${label} (${fmt(live.avgBatch)})`, live.avgBatch >= 100]);
  }

  const stack = await startStack('e2e_latency');
  try {
    const single = await flatOut(
      stack,
      sdkEvents(false, SINGLE_EVENTS).map((e) => ({ ...e, uuid: randomUUID() })),
      SINGLE_CLIENTS,
      50,
      singleSender(stack),
    );
    rows.push(
      `| /i/v0/e/ flat out, with persons (${fmt(SINGLE_EVENTS)} events) | ${fmt(single.rate)} | | | ${fmt(single.avgBatch)} | ${(single.ingestionCpu * 100).toFixed(0)}% | ${(single.captureCpu * 100).toFixed(0)}% | capture acked ${fmt(single.ackRate)}/s |`,
    );
    const latency: string[] = [];
    for (const [rate, batched] of [
      [5, false],
      [500, false],
      [5000, true],
    ] as const) {
      const r = await atRate(stack, rate, batched);
      latency.push(
        `| ${fmt(rate)} events/s (${batched ? '/batch/ of 100' : '/i/v0/e/'}; ${fmt(r.achieved)} achieved) | ${r.p50.toFixed(0)} | ${r.p99.toFixed(0)} | ${r.max.toFixed(0)} | ${fmt(r.avgBatch)} |`,
      );
      if (rate === 5)
        checks.push([`at 5 events/s, 200 to stored p99 <= 500 ms (${r.p99.toFixed(0)} ms)`, r.p99 <= 500]);
    }
    process.stdout.write(
      `\n| path | live events/s | pre-filled events/s | ratio | live batch (events) | ingestion CPU | capture CPU | |\n|---|---|---|---|---|---|---|---|\n${rows.join('\n')}\n`,
    );
    process.stdout.write(
      `\nfrom capture's 200 to the stored row (polled every 20 ms):\n| rate | p50 ms | p99 ms | max ms | live batch (events) |\n|---|---|---|---|---|\n${latency.join('\n')}\n\n`,
    );
  } finally {
    await stack.stop();
  }
  for (const [what, ok] of checks) process.stdout.write(`${ok ? 'OK  ' : 'MISS'} ${what}\n`);
  return checks.every(([, ok]) => ok);
}
