// `pnpm bench edge`: what the local edge (packages/devstack/src/edge.ts, the one URL `pnpm start`
// gives SDKs) costs. decide and capture each run as a child process (their main.ts, on a scratch
// database, Redis and a private dev broker), the edge as a third child in front of both, and
// autocannon in this process sends the same requests to a service directly and through the edge.
// Direct and edge runs alternate (EDGE_BENCH_ROUNDS times each, default 5, EDGE_BENCH_SECONDS
// long, default 3) so drift on a shared machine hits both sides alike; the ratio judged is the
// median over rounds of edge req/s / direct req/s. Target (issue 13): >= 0.8. Also printed: CPU
// time per request of the service, the edge and the load generator (from /proc), which is
// what the ratio comes down to when the machine's cores are the limit.
// EDGE_BENCH_PROFILE=<dir> writes a CPU profile of the edge process there.
// Paths: decide `/decide/?v=4` (the decide bench's 50 flags and request mix), capture
// `/i/v0/e/` (single ~400-byte events) and `/batch/` (100-event bodies of ~40 KB, streamed).
import fs from 'node:fs';
import inspector from 'node:inspector';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { createRedis, writeProjectToken } from '@sett/cache';
import { startDevBroker, startEdge } from '@sett/devstack';
import { bodyMaker, seed } from './decide.bench';
import {
  fmt,
  freePort,
  load,
  ratioLine,
  scratchDatabase,
  startChild,
  type ChildServer,
  type LoadResult,
} from './lib';

const EDGE_ENV = 'SETT_EDGE_BENCH_EDGE';
const DECIDE_MAIN = path.join(__dirname, '..', 'services', 'decide', 'src', 'main.ts');
const CAPTURE_MAIN = path.join(__dirname, '..', 'services', 'capture', 'src', 'main.ts');
const ROUNDS = Number(process.env.EDGE_BENCH_ROUNDS || 5);
const SECONDS = Number(process.env.EDGE_BENCH_SECONDS || 3);
const TARGET = 0.8;

// Edge role: started as a child with the env var set, it runs the edge and nothing else.
if (process.env[EDGE_ENV]) {
  const { port, decide, capture } = JSON.parse(process.env[EDGE_ENV]!) as Record<string, number>;
  const at = (p: number) => ({ host: '127.0.0.1', port: p });
  void startEdge({
    host: '127.0.0.1',
    port: port!,
    // Management is not measured; the decide port stands in so the table is complete.
    upstreams: { decide: at(decide!), capture: at(capture!), management: at(decide!) },
  }).then(() => process.stdout.write(`edge ready on ${port}\n`));
  // EDGE_BENCH_PROFILE=<dir>: a CPU profile of the edge process (node:inspector, since
  // --cpu-prof is not allowed in NODE_OPTIONS), written when it is stopped.
  const dir = process.env.EDGE_BENCH_PROFILE;
  const session = dir ? new inspector.Session() : undefined;
  session?.connect();
  session?.post('Profiler.enable', () => session.post('Profiler.start'));
  process.once('SIGTERM', () => {
    if (!session) process.exit(0);
    session.post('Profiler.stop', (err, result) => {
      if (!err)
        fs.writeFileSync(path.join(dir!, `edge-${process.pid}.cpuprofile`), JSON.stringify(result.profile));
      process.exit(0);
    });
  });
}

function event(): Record<string, unknown> {
  return {
    event: '$pageview',
    distinct_id: `user-${Math.floor(Math.random() * 20_000)}`,
    uuid: randomUUID(),
    timestamp: new Date().toISOString(),
    properties: {
      $current_url: `https://app.example.com/docs/page-${Math.floor(Math.random() * 50)}`,
      $browser: 'Firefox',
      $browser_version: 128,
      $os: 'Mac OS X',
      $screen_width: 1440,
      $screen_height: 900,
      $lib: 'web',
      $lib_version: '1.200.0',
      $session_id: randomUUID(),
      plan: 'pro',
    },
  };
}

interface Case {
  name: string;
  path: string;
  port: number;
  /** The service's process, for its CPU time. */
  pid: number;
  body: () => string;
  connections: number;
}

interface Totals {
  requests: number;
  /** req/s of each round, in order. */
  rounds: number[];
  seconds: number;
  non2xx: number;
  errors: number;
  p99: number[];
  /** CPU milliseconds spent by the service, the edge and the load generator (this process). */
  cpu: { service: number; edge: number; client: number };
}

/** CPU time (user + system) of a process so far, in ms, from /proc (Linux; 0 elsewhere). */
function cpuMs(pid: number): number {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // utime and stime are fields 14 and 15 of the whole line, in clock ticks (100 per second).
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;
  } catch {
    return 0;
  }
}

function selfCpuMs(): number {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
}

const empty = (): Totals => ({
  requests: 0,
  rounds: [],
  seconds: 0,
  non2xx: 0,
  errors: 0,
  p99: [],
  cpu: { service: 0, edge: 0, client: 0 },
});

function add(t: Totals, r: LoadResult) {
  t.requests += r.requests;
  t.rounds.push(r.requests / SECONDS);
  t.seconds += SECONDS;
  t.non2xx += r.non2xx;
  t.errors += r.errors + r.timeouts;
  t.p99.push(r.p99);
}

export async function run(): Promise<boolean> {
  const serverUrl = process.env.DATABASE_URL || 'postgresql://root@127.0.0.1:5432/sett';
  const redisUrl = process.env.REDIS_URL || 'redis://127.0.0.1:6379';
  const children: ChildServer[] = [];
  const broker = await startDevBroker({ partitions: 16 });
  const db = await scratchDatabase(serverUrl, `sett_bench_edge_${process.pid}`);
  const redis = createRedis({ url: redisUrl, name: 'bench-edge' });
  try {
    const project = await seed(db.url);
    await writeProjectToken(redis, project.token, {
      teamId: project.teamId,
      organizationId: project.organizationId,
    });
    const [decidePort, capturePort, edgePort] = [await freePort(), await freePort(), await freePort()];
    const common = { DATABASE_URL: db.url, REDIS_URL: redisUrl, LOG_LEVEL: 'info', LOG_FORMAT: 'json' };
    // One at a time, each kept as soon as it runs, so a child that fails to start does not leave
    // the ones before it running.
    children.push(
      await startChild(
        DECIDE_MAIN,
        { ...common, DECIDE_PORT: String(decidePort), NODE_ENV: 'production' },
        /decide ready/,
      ),
    );
    children.push(
      await startChild(
        CAPTURE_MAIN,
        { ...common, CAPTURE_PORT: String(capturePort), KAFKA_BROKERS: broker.bootstrap },
        /capture ready/,
      ),
    );
    children.push(
      await startChild(
        __filename,
        { [EDGE_ENV]: JSON.stringify({ port: edgePort, decide: decidePort, capture: capturePort }) },
        /edge ready/,
      ),
    );

    const singles = Array.from({ length: 2000 }, () =>
      JSON.stringify({ api_key: project.token, ...event() }),
    );
    const batches = Array.from({ length: 64 }, () =>
      JSON.stringify({ api_key: project.token, batch: Array.from({ length: 100 }, event) }),
    );
    const rotate = (bodies: string[]) => {
      let i = 0;
      return () => bodies[i++ % bodies.length]!;
    };
    const edgePid = children[2]!.process.pid!;
    const cases: Case[] = [
      {
        name: 'decide /decide/?v=4',
        path: '/decide/?v=4',
        port: decidePort,
        pid: children[0]!.process.pid!,
        body: bodyMaker(project.token),
        connections: 50,
      },
      {
        name: 'capture /i/v0/e/',
        path: '/i/v0/e/',
        port: capturePort,
        pid: children[1]!.process.pid!,
        body: rotate(singles),
        connections: 64,
      },
      {
        name: 'capture /batch/',
        path: '/batch/',
        port: capturePort,
        pid: children[1]!.process.pid!,
        body: rotate(batches),
        connections: 16,
      },
    ];
    process.stdout.write(
      `${ROUNDS} alternating rounds of ${SECONDS} s per side; batch bodies ~${Math.round(batches[0]!.length / 1024)} KB\n`,
    );

    const ratios: Array<[string, number]> = [];
    let clean = true;
    for (const c of cases) {
      const url = (port: number) => `http://127.0.0.1:${port}${c.path}`;
      // Warm-up of both sides (JIT, connection pools, caches), not measured.
      for (const port of [c.port, edgePort])
        await load({ url: url(port), body: c.body, connections: c.connections, durationSeconds: 1.5 });
      const direct = empty();
      const edge = empty();
      for (let round = 0; round < ROUNDS; round++) {
        // Alternate which side goes first, so neither always runs on the warmer machine.
        const order: Array<[number, Totals]> =
          round % 2 === 0
            ? [
                [c.port, direct],
                [edgePort, edge],
              ]
            : [
                [edgePort, edge],
                [c.port, direct],
              ];
        for (const [port, totals] of order) {
          const before = { service: cpuMs(c.pid), edge: cpuMs(edgePid), client: selfCpuMs() };
          add(
            totals,
            await load({
              url: url(port),
              body: c.body,
              connections: c.connections,
              durationSeconds: SECONDS,
            }),
          );
          totals.cpu.service += cpuMs(c.pid) - before.service;
          totals.cpu.edge += cpuMs(edgePid) - before.edge;
          totals.cpu.client += selfCpuMs() - before.client;
        }
      }
      const rps = (t: Totals) => t.requests / t.seconds;
      const perRequest = (ms: number, t: Totals) => Math.round((ms * 1000) / Math.max(1, t.requests));
      const describe = (label: string, t: Totals) =>
        `  ${label}: ${fmt(rps(t))} req/s, p99 per round ${t.p99.join(' / ')} ms, non-2xx ${t.non2xx}, errors ${t.errors}; ` +
        `CPU µs per request: service ${perRequest(t.cpu.service, t)}, edge ${perRequest(t.cpu.edge, t)}, load generator ${perRequest(t.cpu.client, t)}\n`;
      process.stdout.write(`${c.name}\n${describe('direct', direct)}${describe('edge  ', edge)}`);
      // Each edge round against the direct round beside it; the median of those pairs is the
      // figure judged, since one pair caught by another process's burst moves it least.
      const pairs = edge.rounds.map((e, i) => e / direct.rounds[i]!).sort((x, y) => x - y);
      const median = pairs[Math.floor(pairs.length / 2)]!;
      process.stdout.write(
        `  ${ratioLine('through the edge (all rounds)', rps(edge), rps(direct), 'req/s')}\n`,
      );
      process.stdout.write(
        `  round ratios ${pairs.map((r) => r.toFixed(2)).join(' ')} -> median ratio ${median.toFixed(2)}\n`,
      );
      ratios.push([c.name, median]);
      if (direct.non2xx + direct.errors + edge.non2xx + edge.errors > 0) clean = false;
    }

    const checks: Array<[string, boolean]> = [
      ...ratios.map(([name, ratio]): [string, boolean] => [
        `${name} through the edge >= ${TARGET} of direct (median round ratio ${ratio.toFixed(2)})`,
        ratio >= TARGET,
      ]),
      ['no non-2xx or errors', clean],
    ];
    for (const [name, ok] of checks) process.stdout.write(`${ok ? 'PASS' : 'MISS'} ${name}\n`);
    return checks.every(([, ok]) => ok);
  } finally {
    for (const c of children.reverse()) await c.stop();
    redis.disconnect();
    await broker.stop();
    await db.drop().catch(() => undefined);
  }
}
