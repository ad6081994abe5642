// `pnpm bench decide-peer`: decide against the flag servers a self-hoster would run instead,
// on this machine, in one run: unleash-server (its frontend API, which evaluates every flag for
// the context of the request, as `/flags` does) and the Unleash Proxy (which evaluates in memory
// from the flags it polls from unleash-server).
//
// The peers are installed from npm, at pinned versions, into a scratch folder outside the
// workspace (SETT_PEER_DIR, default <tmp>/sett-decide-peer; kept between runs, so only the first
// run downloads), and unleash-server runs on its own scratch database on the same Postgres.
// All three get the same 50 flags (same keys, same rollouts, the same property condition on a
// third of them) and the same requests: a fresh user id each, with the one property the
// conditions read, so that no server needs a stored person. Each is driven with the same
// connections for the same time, in turns (A B C A B C …), so that load from elsewhere falls on
// all alike. Targets: decide >= 5x unleash-server's and >= 3x the proxy's requests/s, decide's
// p99 <= 25 ms at 50 connections.
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { promisify } from 'node:util';
import { createPgPool, quoteIdent, withDatabase, withMaintenanceClient } from '@sett/db';
import {
  combineTurns,
  fmt,
  forgetBenchProject,
  freePort,
  insertBenchProject,
  load,
  scratchDatabase,
  startDecide,
  startProcess,
  type ChildServer,
  type LoadResult,
} from './lib';

const UNLEASH_SERVER = '7.5.1';
const UNLEASH_PROXY = '1.4.19';
const FLAGS = 50;
const CONNECTIONS = 50;
/** Seconds each server is loaded, split into TURNS turns. */
const SECONDS = 8;
const TURNS = 4;
const PLANS = ['free', 'pro', 'enterprise'];
/** The property condition a third of the flags carry. */
const TARGETED_PLANS = ['pro', 'enterprise'];

/** Flag i: rolled out to ROLLOUTS[i % 5] percent; every third (i % 3 === 0) also needs plan in TARGETED_PLANS. */
const ROLLOUTS = [10, 25, 50, 75, 100];
interface PeerFlag {
  key: string;
  rollout: number;
  targeted: boolean;
}
export function peerFlags(): PeerFlag[] {
  return Array.from({ length: FLAGS }, (_, i) => ({
    key: `flag-${i}`,
    rollout: ROLLOUTS[i % ROLLOUTS.length]!,
    targeted: i % 3 === 0,
  }));
}

const exec = promisify(execFile);

/** unleash-server and the proxy at the pinned versions in `dir`, installed when missing. */
async function installPeers(dir: string): Promise<void> {
  const installed = (pkg: string) => {
    try {
      return (
        JSON.parse(fs.readFileSync(path.join(dir, 'node_modules', pkg, 'package.json'), 'utf8')) as {
          version: string;
        }
      ).version;
    } catch {
      return undefined;
    }
  };
  if (installed('unleash-server') === UNLEASH_SERVER && installed('@unleash/proxy') === UNLEASH_PROXY) return;
  fs.mkdirSync(dir, { recursive: true });
  if (!fs.existsSync(path.join(dir, 'package.json')))
    fs.writeFileSync(path.join(dir, 'package.json'), '{"name":"sett-decide-peer","private":true}\n');
  process.stdout.write(
    `installing unleash-server@${UNLEASH_SERVER} and @unleash/proxy@${UNLEASH_PROXY} into ${dir} (first run only)\n`,
  );
  try {
    await exec(
      'npm',
      [
        'install',
        '--no-audit',
        '--no-fund',
        '--loglevel=error',
        `unleash-server@${UNLEASH_SERVER}`,
        `@unleash/proxy@${UNLEASH_PROXY}`,
      ],
      { cwd: dir, maxBuffer: 16 * 1024 * 1024, timeout: 600_000 },
    );
  } catch (err) {
    const e = err as { stderr?: string; message: string };
    throw new Error(
      `could not install the peers from npm into ${dir} (is the npm registry reachable?): ${e.stderr || e.message}`,
    );
  }
}

async function json(url: string, init: RequestInit): Promise<unknown> {
  const res = await fetch(url, init);
  const text = await res.text();
  if (!res.ok) throw new Error(`${init.method ?? 'GET'} ${url} answered ${res.status}: ${text}`);
  return text ? JSON.parse(text) : undefined;
}

/** unleash-server on its own scratch database, with admin, frontend and client tokens made at start. */
async function startUnleash(
  dir: string,
  serverUrl: string,
): Promise<{ server: ChildServer; port: number; drop: () => Promise<void> }> {
  const name = 'sett_bench_unleash';
  const drop = () =>
    withMaintenanceClient(serverUrl, (c) =>
      c.query(`DROP DATABASE IF EXISTS ${quoteIdent(name)} WITH (FORCE)`),
    ).then(() => undefined);
  await drop();
  await withMaintenanceClient(serverUrl, (c) => c.query(`CREATE DATABASE ${quoteIdent(name)}`));
  const port = await freePort();
  const server = await startProcess(
    'unleash-server',
    ['-e', `require('unleash-server').start({ server: { port: ${port} } })`],
    {
      cwd: dir,
      env: {
        DATABASE_URL: withDatabase(serverUrl, name),
        DATABASE_SSL: 'false',
        INIT_ADMIN_API_TOKENS: '*:*.bench-admin',
        INIT_FRONTEND_API_TOKENS: 'default:development.bench-frontend',
        INIT_CLIENT_API_TOKENS: 'default:development.bench-client',
        LOG_LEVEL: 'error',
        CHECK_VERSION: 'false',
        SEND_TELEMETRY: 'false',
        NODE_ENV: 'production',
      },
      probe: async () => (await fetch(`http://127.0.0.1:${port}/health`).catch(() => undefined))?.ok === true,
      timeoutMs: 120_000,
    },
  );
  return { server, port, drop };
}

/** The flags through unleash's admin API: each on in `development` with a flexible rollout
 * sticky on the user id, and a `plan IN (…)` constraint where targeted. */
async function loadUnleashFlags(port: number): Promise<void> {
  const base = `http://127.0.0.1:${port}/api/admin`;
  const headers = { authorization: '*:*.bench-admin', 'content-type': 'application/json' };
  const post = (p: string, body?: unknown) =>
    json(`${base}${p}`, {
      method: 'POST',
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  await post('/context', { name: 'plan' });
  for (const f of peerFlags()) {
    await post('/projects/default/features', { name: f.key });
    await post(`/projects/default/features/${f.key}/environments/development/strategies`, {
      name: 'flexibleRollout',
      parameters: { rollout: String(f.rollout), stickiness: 'userId', groupId: f.key },
      constraints: f.targeted ? [{ contextName: 'plan', operator: 'IN', values: TARGETED_PLANS }] : [],
    });
    await post(`/projects/default/features/${f.key}/environments/development/on`);
  }
}

/** The same flags as PostHog filters: one condition group, rolled out, with a person property
 * condition where targeted. */
export async function loadSettFlags(databaseUrl: string) {
  const pool = createPgPool({ databaseUrl, max: 2 });
  try {
    const project = await insertBenchProject(pool);
    for (const f of peerFlags()) {
      const properties = f.targeted
        ? [{ key: 'plan', type: 'person', operator: 'exact', value: TARGETED_PLANS }]
        : [];
      await pool.query('INSERT INTO feature_flags (team_id, key, name, filters) VALUES ($1, $2, $3, $4)', [
        project.teamId,
        f.key,
        f.key,
        JSON.stringify({ groups: [{ properties, rollout_percentage: f.rollout }] }),
      ]);
    }
    return project;
  } finally {
    await pool.end();
  }
}

/** Flags every request with plan `pro` must get: rolled out to everyone. */
const alwaysOn = () =>
  peerFlags()
    .filter((f) => f.rollout === 100)
    .map((f) => f.key)
    .sort();

/** Waits until a peer's answer lists every always-on flag (unleash serves from a cache it refreshes). */
async function waitForToggles(url: string, authorization: string): Promise<void> {
  const want = alwaysOn();
  const deadline = Date.now() + 60_000;
  let last = '';
  while (Date.now() < deadline) {
    const body = (await json(url, {
      method: 'POST',
      headers: { authorization, 'content-type': 'application/json' },
      body: JSON.stringify({ context: { userId: 'check', properties: { plan: 'pro' } } }),
    }).catch((err: Error) => ({ error: err.message }))) as { toggles?: Array<{ name: string }> };
    const names = (body.toggles ?? []).map((t) => t.name);
    if (want.every((k) => names.includes(k))) return;
    last = JSON.stringify(body).slice(0, 300);
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`${url} never listed the always-on flags; last answer: ${last}`);
}

export async function run(): Promise<boolean> {
  const serverUrl = process.env.DATABASE_URL || 'postgresql://root@127.0.0.1:5432/sett';
  const redisUrl = process.env.REDIS_URL || 'redis://127.0.0.1:6379';
  const dir = process.env.SETT_PEER_DIR || path.join(os.tmpdir(), 'sett-decide-peer');
  await installPeers(dir);

  const db = await scratchDatabase(serverUrl, `sett_bench_decide_peer_${process.pid}`);
  const project = await loadSettFlags(db.url);
  const started: ChildServer[] = [];
  let dropUnleash: (() => Promise<void>) | undefined;
  try {
    const decide = await startDecide(db.url);
    started.push(decide);
    const unleash = await startUnleash(dir, serverUrl);
    started.push(unleash.server);
    dropUnleash = unleash.drop;
    await loadUnleashFlags(unleash.port);
    const proxyPort = await freePort();
    const proxy = await startProcess('unleash-proxy', ['-e', `require('@unleash/proxy').start()`], {
      cwd: dir,
      env: {
        PROXY_PORT: String(proxyPort),
        UNLEASH_URL: `http://127.0.0.1:${unleash.port}/api/`,
        UNLEASH_API_TOKEN: 'default:development.bench-client',
        UNLEASH_PROXY_CLIENT_KEYS: 'bench-proxy',
        UNLEASH_FETCH_INTERVAL: '1000',
        LOG_LEVEL: 'error',
        NODE_ENV: 'production',
      },
      ready: /listening on port/,
    });
    started.push(proxy);

    const frontendUrl = `http://127.0.0.1:${unleash.port}/api/frontend`;
    const proxyUrl = `http://127.0.0.1:${proxyPort}/proxy`;
    const decideUrl = `http://127.0.0.1:${decide.port}/flags/?v=2`;
    await waitForToggles(frontendUrl, 'default:development.bench-frontend');
    await waitForToggles(proxyUrl, 'bench-proxy');
    const sample = (await json(decideUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        api_key: project.token,
        distinct_id: 'check',
        person_properties: { plan: 'pro' },
      }),
    })) as { flags: Record<string, { enabled: boolean }>; errorsWhileComputingFlags: boolean };
    const settOn = Object.keys(sample.flags).filter((k) => sample.flags[k]!.enabled);
    if (
      Object.keys(sample.flags).length !== FLAGS ||
      sample.errorsWhileComputingFlags ||
      !alwaysOn().every((k) => settOn.includes(k))
    )
      throw new Error(`decide's answer is not the flags loaded: ${JSON.stringify(sample).slice(0, 300)}`);

    // One plan per request, drawn at random; a fresh user id each.
    const plan = () => PLANS[Math.floor(Math.random() * PLANS.length)]!;
    const unleashBody = () =>
      JSON.stringify({ context: { userId: randomUUID(), properties: { plan: plan() } } });
    const servers: Array<{ name: string; url: string; headers: Record<string, string>; body: () => string }> =
      [
        {
          name: 'sett decide',
          url: decideUrl,
          headers: {},
          body: () =>
            JSON.stringify({
              api_key: project.token,
              distinct_id: randomUUID(),
              person_properties: { plan: plan() },
            }),
        },
        {
          name: `unleash-server ${UNLEASH_SERVER}`,
          url: frontendUrl,
          headers: { authorization: 'default:development.bench-frontend' },
          body: unleashBody,
        },
        {
          name: `unleash proxy ${UNLEASH_PROXY}`,
          url: proxyUrl,
          headers: { authorization: 'bench-proxy' },
          body: unleashBody,
        },
      ];
    process.stdout.write(
      `${FLAGS} flags (rollouts ${ROLLOUTS.join('/')}%, ${peerFlags().filter((f) => f.targeted).length} with plan in ` +
        `[${TARGETED_PLANS.join(', ')}]); ${CONNECTIONS} connections, ${SECONDS} s each in ${TURNS} turns; ` +
        `a fresh user id and a plan per request\n`,
    );
    for (const s of servers) await load({ ...s, connections: 20, durationSeconds: 2 });
    const turns = servers.map(() => [] as LoadResult[]);
    for (let t = 0; t < TURNS; t++)
      for (const [i, s] of servers.entries())
        turns[i]!.push(await load({ ...s, connections: CONNECTIONS, durationSeconds: SECONDS / TURNS }));
    const results = turns.map(combineTurns);
    for (const [i, s] of servers.entries()) {
      const r = results[i]!;
      process.stdout.write(
        `${s.name.padEnd(22)} ${fmt(r.rps).padStart(7)} req/s (turns ${fmt(r.turnMin)}–${fmt(r.turnMax)}), ` +
          `p50 ${r.p50} ms, p99 ${r.p99} ms (${r.requests} requests, non-2xx ${r.non2xx}, errors ${r.errors})\n`,
      );
    }
    const [sett, server, proxyResult] = [results[0]!, results[1]!, results[2]!];
    const vsServer = sett.rps / server.rps;
    const vsProxy = sett.rps / proxyResult.rps;
    process.stdout.write(`ratio decide / unleash-server: ${vsServer.toFixed(2)}x\n`);
    process.stdout.write(`ratio decide / unleash proxy: ${vsProxy.toFixed(2)}x\n`);
    const checks: Array<[string, boolean]> = [
      [`decide >= 5x unleash-server (${vsServer.toFixed(2)}x)`, vsServer >= 5],
      [`decide >= 3x the unleash proxy (${vsProxy.toFixed(2)}x)`, vsProxy >= 3],
      [`decide p99 at ${CONNECTIONS} connections <= 25 ms (${sett.p99} ms)`, sett.p99 <= 25],
      ['no errors or non-2xx on any server', results.every((r) => r.non2xx + r.errors + r.timeouts === 0)],
    ];
    for (const [name, ok] of checks) process.stdout.write(`${ok ? 'PASS' : 'MISS'} ${name}\n`);
    return checks.every(([, ok]) => ok);
  } finally {
    for (const s of started.reverse()) await s.stop();
    await dropUnleash?.();
    await forgetBenchProject(redisUrl, project);
    await db.drop();
  }
}
