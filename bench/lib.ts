// Shared benchmark helpers: an autocannon run with its figures, child-process servers that
// stop with the benchmark, the side-by-side ratio line every benchmark prints, and a scratch
// database with one bench project.
import { spawn, type ChildProcess } from 'node:child_process';
import net from 'node:net';
import path from 'node:path';
import readline from 'node:readline';
import { randomUUID } from 'node:crypto';
import autocannon from 'autocannon';
import { createPersonalKey } from '@sett/cli';
import type { Pool } from 'pg';
import { ensureDatabase, migrateDeploy, quoteIdent, withDatabase, withMaintenanceClient } from '@sett/db';
import { createRedis, redisKeys } from '@sett/cache';

export interface LoadOptions {
  url: string;
  method?: 'GET' | 'POST' | 'PATCH';
  headers?: Record<string, string>;
  /** A fixed body, or a function producing one body per request. */
  body?: string | (() => string);
  connections?: number;
  durationSeconds?: number;
  /** Stop after this many requests (bounded even if the server is fast). */
  amount?: number;
  /** Requests per second cap over all connections (for latency at a fixed rate). */
  overallRate?: number;
}

export interface LoadResult {
  requests: number;
  rps: number;
  p50: number;
  p99: number;
  non2xx: number;
  errors: number;
  timeouts: number;
}

export async function load(opts: LoadOptions): Promise<LoadResult> {
  const bodyFn = typeof opts.body === 'function' ? opts.body : undefined;
  const result = await autocannon({
    url: opts.url,
    method: opts.method ?? 'POST',
    headers: { 'content-type': 'application/json', ...opts.headers },
    body: typeof opts.body === 'string' ? opts.body : undefined,
    connections: opts.connections ?? 50,
    duration: opts.durationSeconds ?? 10,
    amount: opts.amount,
    overallRate: opts.overallRate,
    timeout: 10,
    requests: bodyFn ? [{ setupRequest: (req) => ({ ...req, body: bodyFn() }) }] : undefined,
  });
  return {
    requests: result.requests.total,
    rps: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    non2xx: result.non2xx,
    errors: result.errors,
    timeouts: result.timeouts,
  };
}

/** Turns of one server's load as one run: requests and rate summed over the turns, latency
 * percentiles the median of the turns' (autocannon gives percentiles, not samples), and the
 * slowest and fastest turn's rate. */
export function combineTurns(turns: LoadResult[]): LoadResult & { turnMin: number; turnMax: number } {
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  const sum = (f: (r: LoadResult) => number) => turns.reduce((n, r) => n + f(r), 0);
  const rates = turns.map((r) => r.rps);
  return {
    requests: sum((r) => r.requests),
    rps: sum((r) => r.rps) / turns.length,
    p50: median(turns.map((r) => r.p50)),
    p99: median(turns.map((r) => r.p99)),
    non2xx: sum((r) => r.non2xx),
    errors: sum((r) => r.errors),
    timeouts: sum((r) => r.timeouts),
    turnMin: Math.min(...rates),
    turnMax: Math.max(...rates),
  };
}

export function ratioLine(label: string, subject: number, baseline: number, unit: string): string {
  const ratio = baseline > 0 ? subject / baseline : NaN;
  return `${label}: ${fmt(subject)} ${unit} vs baseline ${fmt(baseline)} ${unit} -> ratio ${ratio.toFixed(2)}`;
}

export function fmt(n: number): string {
  return n >= 100 ? Math.round(n).toLocaleString('en-US') : n.toFixed(2);
}

export interface ChildServer {
  process: ChildProcess;
  stop(): Promise<void>;
}

/** Starts `node --import tsx <script>` and resolves once a stdout line matches `ready`. */
export function startChild(
  script: string,
  env: NodeJS.ProcessEnv,
  ready: RegExp,
  timeoutMs = 30_000,
): Promise<ChildServer> {
  return startProcess(script, ['--import', 'tsx', script], { env, ready, timeoutMs });
}

/**
 * Starts `node <args>` (a server of ours or a peer's) and resolves once a line of its output
 * matches `ready`, or `probe` answers true; rejects with its last lines if it exits first or is
 * not ready in time.
 */
export async function startProcess(
  label: string,
  args: string[],
  opts: {
    env: NodeJS.ProcessEnv;
    ready?: RegExp;
    probe?: () => Promise<boolean>;
    cwd?: string;
    timeoutMs?: number;
  },
): Promise<ChildServer> {
  const timeoutMs = opts.timeoutMs ?? 30_000;
  const child = spawn(process.execPath, args, {
    env: { ...process.env, ...opts.env },
    cwd: opts.cwd,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const lines: string[] = [];
  const readers: readline.Interface[] = [];
  let probing: NodeJS.Timeout | undefined;
  let settled = false;
  try {
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`${label} not ready in ${timeoutMs} ms:\n${lines.slice(-20).join('\n')}`)),
        timeoutMs,
      );
      const done = () => {
        settled = true;
        clearTimeout(timer);
        resolve();
      };
      for (const s of [child.stdout!, child.stderr!]) {
        const reader = readline.createInterface({ input: s });
        readers.push(reader);
        reader.on('line', (l) => {
          lines.push(l);
          if (opts.ready?.test(l)) done();
        });
      }
      if (opts.probe) {
        const probe = opts.probe;
        const again = () => {
          if (settled) return;
          probing = setTimeout(() => {
            probe().then((ok) => (ok ? done() : again()), again);
          }, 200);
        };
        again();
      }
      child.once('exit', (code) => {
        settled = true;
        clearTimeout(timer);
        reject(new Error(`${label} exited with ${code}:\n${lines.slice(-20).join('\n')}`));
      });
    });
  } catch (err) {
    settled = true;
    child.kill('SIGKILL');
    throw err;
  } finally {
    clearTimeout(probing);
  }
  // Once ready, the child's lines (an access line per request) are drained unread: splitting
  // and keeping them took the load generator's CPU, which the baselines (silent) did not pay.
  for (const reader of readers) reader.close();
  for (const s of [child.stdout!, child.stderr!]) s.resume();
  return {
    process: child,
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
        setTimeout(() => child.kill('SIGKILL'), 15_000).unref();
      }),
  };
}

const DECIDE_MAIN = path.join(__dirname, '..', 'services', 'decide', 'src', 'main.ts');

/**
 * Decide as the benches measure it: its own production-mode process on a free port, over
 * `databaseUrl` and REDIS_URL, ready once it logs so. `env` adds or overrides settings.
 */
export async function startDecide(
  databaseUrl: string,
  env: NodeJS.ProcessEnv = {},
): Promise<ChildServer & { port: number }> {
  const port = await freePort();
  const child = await startChild(
    DECIDE_MAIN,
    {
      DATABASE_URL: databaseUrl,
      REDIS_URL: process.env.REDIS_URL || 'redis://127.0.0.1:6379',
      DECIDE_PORT: String(port),
      LOG_LEVEL: 'info',
      LOG_FORMAT: 'json',
      NODE_ENV: 'production',
      // SETT_DECIDE_CPU_PROFILE_DIR profiles decide alone (bench/cpu-profile-preload.mjs).
      ...profiled(process.env.SETT_DECIDE_CPU_PROFILE_DIR),
      ...env,
    },
    /decide ready/,
  );
  return { ...child, port };
}

const CAPTURE_MAIN = path.join(__dirname, '..', 'services', 'capture', 'src', 'main.ts');

/** Capture as the benches measure it: its own process on a free port, producing to `brokers`;
 * `env` adds or overrides settings. */
export async function startCapture(
  databaseUrl: string,
  brokers: string,
  env: NodeJS.ProcessEnv = {},
): Promise<ChildServer & { port: number }> {
  const port = await freePort();
  const child = await startChild(
    CAPTURE_MAIN,
    {
      CAPTURE_PORT: String(port),
      KAFKA_BROKERS: brokers,
      DATABASE_URL: databaseUrl,
      REDIS_URL: process.env.REDIS_URL || 'redis://127.0.0.1:6379',
      LOG_LEVEL: 'info',
      LOG_FORMAT: 'json',
      // SETT_CAPTURE_CPU_PROFILE_DIR profiles capture alone (bench/cpu-profile-preload.mjs).
      ...profiled(process.env.SETT_CAPTURE_CPU_PROFILE_DIR),
      ...env,
    },
    /"capture ready"/,
  );
  return { ...child, port };
}

/** The settings that make a child write a CPU profile into `dir` when it exits (none without one). */
function profiled(dir: string | undefined): NodeJS.ProcessEnv {
  if (!dir) return {};
  return {
    NODE_OPTIONS: `--import ${path.join(__dirname, 'cpu-profile-preload.mjs')}`,
    SETT_CPU_PROFILE_DIR: dir,
  };
}

/** A port that was free a moment ago, for a child server to listen on. */
export async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const port = (server.address() as net.AddressInfo).port;
  await new Promise<void>((r) => server.close(() => r()));
  return port;
}

/** A freshly migrated database for one benchmark run (any earlier one of that name dropped). */
export async function scratchDatabase(
  serverUrl: string,
  name: string,
): Promise<{ url: string; drop: () => Promise<void> }> {
  const url = withDatabase(serverUrl, name);
  const drop = () =>
    withMaintenanceClient(serverUrl, (c) =>
      c.query(`DROP DATABASE IF EXISTS ${quoteIdent(name)} WITH (FORCE)`),
    ).then(() => undefined);
  await drop();
  await ensureDatabase(url);
  await migrateDeploy({ databaseUrl: url });
  return { url, drop };
}

/**
 * One organization and project ("Bench") in the benchmark database. The team id is drawn at random
 * high up, so the Redis keys (per team id) of no other Sett database on this Redis are touched.
 * `teamColumns` sets further boolean columns of the team (SDK settings).
 */
export async function insertBenchProject(
  pool: Pool,
  teamColumns: Record<string, boolean> = {},
): Promise<{ organizationId: string; token: string; teamId: number }> {
  await pool.query(`SELECT setval('teams_id_seq', $1)`, [
    2_000_000_000 + Math.floor(Math.random() * 100_000_000),
  ]);
  const organizationId = randomUUID();
  await pool.query('INSERT INTO organizations (id, name, slug) VALUES ($1, $2, $3)', [
    organizationId,
    'Bench',
    `bench-${organizationId}`,
  ]);
  const token = `phc_bench${randomUUID().replace(/-/g, '')}`;
  const columns = Object.keys(teamColumns).map(quoteIdent);
  const values = Object.values(teamColumns);
  const { rows } = await pool.query<{ id: number }>(
    `INSERT INTO teams (uuid, organization_id, api_token, name${columns.map((c) => `, ${c}`).join('')})
     VALUES (gen_random_uuid(), $1, $2, 'Bench'${values.map((_, i) => `, $${i + 3}`).join('')}) RETURNING id`,
    [organizationId, token, ...values],
  );
  return { organizationId, token, teamId: rows[0]!.id };
}

/** An owner (level 15) of the project's organization with a personal key of `scopes`, made
 * afresh each run (its key is printed nowhere). */
export async function benchOwnerKey(
  client: Pick<Pool, 'query'>,
  databaseUrl: string,
  teamId: number,
  scopes: string[],
): Promise<string> {
  const owner = (
    await client.query<{ uuid: string }>(
      `INSERT INTO users (uuid, distinct_id, email, first_name, current_organization_id, current_team_id)
       SELECT gen_random_uuid(), 'owner-' || gen_random_uuid(), 'owner-' || gen_random_uuid() || '@bench.test', 'Owner', organization_id, id
         FROM teams WHERE id = $1 RETURNING uuid`,
      [teamId],
    )
  ).rows[0]!.uuid;
  await client.query(
    `INSERT INTO organization_memberships (id, organization_id, user_id, level)
     SELECT gen_random_uuid(), u.current_organization_id, u.id, 15 FROM users u WHERE u.uuid = $1`,
    [owner],
  );
  return (await createPersonalKey({ databaseUrl, userUuid: owner, scopes, label: 'bench' }))
    .personal_api_key!;
}

/**
 * Drops what decide cached in Redis for a bench project (flags, group types, token, this month's
 * flag usage, and `extraKeys`), so that no other Sett database on this Redis is left with it.
 */
export async function forgetBenchProject(
  redisUrl: string,
  project: { teamId: number; token: string; organizationId: string },
  extraKeys: string[] = [],
): Promise<void> {
  const redis = createRedis({ url: redisUrl });
  await redis
    .del(
      redisKeys.flags(project.teamId),
      redisKeys.groupTypes(project.teamId),
      redisKeys.token(project.token),
      redisKeys.flagUsage(project.organizationId, new Date().toISOString().slice(0, 7)),
      ...extraKeys,
    )
    .catch(() => undefined);
  redis.disconnect();
}
