// `pnpm bench decompression`: ordinary events while gzip bombs arrive. The capture service (its
// own process, default settings, a private dev broker) receives waves of 40 concurrent gzip
// bombs of valid JSON at its decompressed cap (20 MB of JSON in about 20 KB of gzip each) for a
// few seconds, while one client sends ordinary single events one after another and times them.
// Baseline in the same run: the same client against the same process before the bombs. Also
// printed: capture's peak RSS during the bombs, and how the bombs were answered.
// Targets: ordinary events' p99 under attack within 10x their p99 alone (and every one 200),
// peak RSS under 1 GB.
import { readFileSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { randomUUID } from 'node:crypto';
import { gzipSync } from 'node:zlib';
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
import { fmt, insertBenchProject, ratioLine, startCapture } from './lib';

const BOMBS = 40;
const ATTACK_MS = 8_000;
const BASELINE_EVENTS = 300;
const MB = 1024 * 1024;

const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });

function post(port: number, body: Buffer | string, headers: Record<string, string>, keepAlive: boolean) {
  return new Promise<{ status: number; ms: number }>((resolve, reject) => {
    const started = process.hrtime.bigint();
    const req = http.request(
      {
        host: '127.0.0.1',
        port,
        method: 'POST',
        path: '/e/',
        agent: keepAlive ? agent : false,
        headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) },
      },
      (res) => {
        res.resume();
        res.on('end', () =>
          resolve({ status: res.statusCode!, ms: Number(process.hrtime.bigint() - started) / 1e6 }),
        );
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

const percentile = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.ceil(xs.length * p) - 1]!;

export async function run(): Promise<boolean> {
  const broker = await startDevBroker({ partitions: 4 });
  const serverUrl = process.env.DATABASE_URL || 'postgresql://root@127.0.0.1:5432/postgres';
  const dbName = `sett_bench_decompression_${Date.now().toString(36)}`;
  const dbUrl = withDatabase(serverUrl, dbName);
  const redis = createRedis({
    url: process.env.REDIS_URL || 'redis://127.0.0.1:6379',
    name: 'bench-decompression',
  });
  let stopCapture: (() => Promise<void>) | undefined;
  try {
    await ensureDatabase(dbUrl);
    await migrateDeploy({ databaseUrl: dbUrl });
    const pool = createPgPool({ databaseUrl: dbUrl, max: 1 });
    const { token, teamId, organizationId } = await insertBenchProject(pool).finally(() => pool.end());
    await writeProjectToken(redis, token, { teamId, organizationId });
    const capture = await startCapture(dbUrl, broker.bootstrap);
    stopCapture = capture.stop;
    const pid = capture.process.pid!;

    const json = { 'content-type': 'application/json' };
    const ordinary = () =>
      post(
        capture.port,
        JSON.stringify({ api_key: token, event: 'ordinary', distinct_id: randomUUID() }),
        json,
        true,
      );
    for (let i = 0; i < 50; i++) await ordinary(); // warm up
    const alone: number[] = [];
    for (let i = 0; i < BASELINE_EVENTS; i++) alone.push((await ordinary()).ms);

    const head = `{"api_key":${JSON.stringify(token)},"event":"bomb","distinct_id":"b","properties":{"p":"`;
    const tail = '"}}';
    const bomb = gzipSync(
      Buffer.concat([
        Buffer.from(head),
        Buffer.alloc(20 * MB - head.length - tail.length, 'a'),
        Buffer.from(tail),
      ]),
      { level: 9 },
    );
    writeFileSync(`/proc/${pid}/clear_refs`, '5');
    const deadline = Date.now() + ATTACK_MS;
    const bombStatuses = new Map<number, number>();
    const attacker = async () => {
      while (Date.now() < deadline) {
        const r = await post(capture.port, bomb, { 'content-encoding': 'gzip' }, false);
        bombStatuses.set(r.status, (bombStatuses.get(r.status) ?? 0) + 1);
      }
    };
    const attack = Promise.all(Array.from({ length: BOMBS }, attacker));
    const during: number[] = [];
    const statuses = new Set<number>();
    while (Date.now() < deadline) {
      const r = await ordinary();
      during.push(r.ms);
      statuses.add(r.status);
    }
    await attack;
    const peakKb = Number(/VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]);

    const p99Alone = percentile(alone, 0.99);
    const p99During = percentile(during, 0.99);
    process.stdout.write(
      `bombs answered: ${[...bombStatuses].map(([s, n]) => `${n} x ${s}`).join(', ')}; ordinary events: ${during.length} during, all ${[...statuses].join('/')}\n`,
    );
    process.stdout.write(
      `${ratioLine('ordinary event p50 under bombs', percentile(during, 0.5), percentile(alone, 0.5), 'ms')}\n`,
    );
    process.stdout.write(`${ratioLine('ordinary event p99 under bombs', p99During, p99Alone, 'ms')}\n`);
    process.stdout.write(`capture peak RSS under bombs: ${fmt(peakKb / 1024)} MB\n`);
    const ok = p99During <= 10 * p99Alone && statuses.size === 1 && statuses.has(200) && peakKb < 1024 * 1024;
    process.stdout.write(ok ? 'ok\n' : 'FAILED: p99 over 10x alone, a non-200, or RSS over 1 GB\n');
    return ok;
  } finally {
    await stopCapture?.();
    agent.destroy();
    redis.disconnect();
    await broker.stop();
    await withMaintenanceClient(serverUrl, (c) =>
      c.query(`DROP DATABASE IF EXISTS ${quoteIdent(dbName)} WITH (FORCE)`),
    ).catch(() => undefined);
  }
}
