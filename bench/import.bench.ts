// `pnpm bench import`: `sett import` of 1M generated events (SETT_IMPORT_BENCH_EVENTS to scale
// down for a quick run) into a real capture child process (private dev broker, scratch
// database), against the same events posted straight to /batch/ in the same run by a minimal
// client (same batch size in bytes, same number of requests in flight, no validation, no
// compression, no checkpoint). Prints both in events/s and the ratio. Each run is bounded by
// the file and by a 10-minute abort.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import { createRedis, writeProjectToken } from '@sett/cache';
import {
  createPgPool,
  ensureDatabase,
  migrateDeploy,
  quoteIdent,
  withDatabase,
  withMaintenanceClient,
} from '@sett/db';
import { startDevBroker } from '@sett/devstack';
import { runImport } from '@sett/cli';
import { fmt, insertBenchProject, ratioLine, startCapture } from './lib';

const EVENTS = Number(process.env.SETT_IMPORT_BENCH_EVENTS || 1_000_000);
const CONCURRENCY = 4;
const BATCH_BYTES = 4 * 1024 * 1024;
const LIMIT_MS = 10 * 60_000;

function writeEvents(file: string): void {
  const fd = fs.openSync(file, 'w');
  const t0 = Date.UTC(2023, 0, 1);
  let chunk: string[] = [];
  for (let i = 0; i < EVENTS; i++) {
    chunk.push(
      JSON.stringify({
        event: i % 5 === 0 ? 'signed_up' : '$pageview',
        distinct_id: `user-${i % 20_000}`,
        timestamp: new Date(t0 + i * 1000).toISOString(),
        properties: {
          $current_url: `https://app.example.com/p/${i % 97}`,
          $browser: 'Chrome',
          plan: i % 3 ? 'free' : 'pro',
          n: i,
        },
      }),
    );
    if (chunk.length === 10_000) {
      fs.writeSync(fd, `${chunk.join('\n')}\n`);
      chunk = [];
    }
  }
  if (chunk.length) fs.writeSync(fd, `${chunk.join('\n')}\n`);
  fs.closeSync(fd);
}

/** The baseline: lines straight into /batch/ bodies of the same size, CONCURRENCY at a time. */
async function postDirect(file: string, url: string, token: string, signal: AbortSignal): Promise<number> {
  const lines = readline.createInterface({ input: fs.createReadStream(file), crlfDelay: Infinity });
  const inflight = new Set<Promise<void>>();
  let batch: string[] = [];
  let bytes = 0;
  let sent = 0;
  const post = async (events: string[]) => {
    const res = await fetch(`${url}/batch/`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: `{"api_key":"${token}","historical_migration":true,"batch":[${events.join(',')}]}`,
      signal,
    });
    await res.text();
    if (res.status !== 200) throw new Error(`baseline: HTTP ${res.status}`);
    sent += events.length;
  };
  const launch = async () => {
    const p = post(batch).finally(() => inflight.delete(p));
    inflight.add(p);
    batch = [];
    bytes = 0;
    if (inflight.size >= CONCURRENCY) await Promise.race(inflight);
  };
  for await (const line of lines) {
    if (bytes + line.length > BATCH_BYTES) await launch();
    batch.push(line);
    bytes += line.length + 1;
  }
  if (batch.length) await launch();
  await Promise.all(inflight);
  return sent;
}

export async function run(): Promise<boolean> {
  const broker = await startDevBroker({ partitions: 8 });
  const serverUrl = process.env.DATABASE_URL || 'postgresql://root@127.0.0.1:5432/postgres';
  const dbName = `sett_bench_import_${Date.now().toString(36)}`;
  const dbUrl = withDatabase(serverUrl, dbName);
  const redisUrl = process.env.REDIS_URL || 'redis://127.0.0.1:6379';
  const redis = createRedis({ url: redisUrl, name: 'bench-import' });
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sett-bench-import-'));
  const children: Array<{ stop(): Promise<void> }> = [];
  const limit = AbortSignal.timeout(LIMIT_MS);
  try {
    await ensureDatabase(dbUrl);
    await migrateDeploy({ databaseUrl: dbUrl });
    const pool = createPgPool({ databaseUrl: dbUrl, max: 1 });
    const { token, teamId, organizationId } = await insertBenchProject(pool).finally(() => pool.end());
    await writeProjectToken(redis, token, { teamId, organizationId });
    const capture = await startCapture(dbUrl, broker.bootstrap);
    children.push(capture);
    const port = capture.port;
    const url = `http://127.0.0.1:${port}`;

    const file = path.join(dir, 'events.jsonl');
    writeEvents(file);
    const size = fs.statSync(file).size;
    process.stdout.write(
      `${fmt(EVENTS)} events, ${(size / 1024 / 1024).toFixed(0)} MB, ${CONCURRENCY} requests in flight, ${BATCH_BYTES / 1024 / 1024} MB batches\n`,
    );

    let t = Date.now();
    const direct = await postDirect(file, url, token, limit);
    const directRate = direct / ((Date.now() - t) / 1000);
    process.stdout.write(
      `direct /batch/: ${fmt(direct)} events in ${((Date.now() - t) / 1000).toFixed(1)} s\n`,
    );

    t = Date.now();
    const r = await runImport({
      file,
      apiKey: token,
      url,
      format: 'posthog',
      concurrency: CONCURRENCY,
      batchBytes: BATCH_BYTES,
      signal: limit,
      progress: () => ({ update() {}, log: (m) => process.stdout.write(`${m}\n`), stop() {} }),
    });
    const importRate = r.accepted / ((Date.now() - t) / 1000);
    process.stdout.write(
      `sett import: ${fmt(r.accepted)} events accepted in ${((Date.now() - t) / 1000).toFixed(1)} s (${r.status})\n`,
    );
    process.stdout.write(`${ratioLine('import vs direct /batch/', importRate, directRate, 'events/s')}\n`);
    return r.status === 'completed' && r.accepted === EVENTS && direct === EVENTS;
  } finally {
    for (const c of children.reverse()) await c.stop();
    redis.disconnect();
    await broker.stop();
    fs.rmSync(dir, { recursive: true, force: true });
    await withMaintenanceClient(serverUrl, (c) =>
      c.query(`DROP DATABASE IF EXISTS ${quoteIdent(dbName)} WITH (FORCE)`),
    ).catch(() => undefined);
  }
}
