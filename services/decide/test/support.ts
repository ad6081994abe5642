// Integration test support: a real decide app on port 0 over a fresh database and a
// prefix-isolated Redis, plus seeding helpers that write what management and ingestion write.
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import readline from 'node:readline';
import type { Pool } from 'pg';
import { createRedis, writeProjectToken, type Redis } from '@sett/cache';
import { createPgPool } from '@sett/db';
import { createMetricsRegistry, startService, type RunningService } from '@sett/http';
import { createSilentLogger } from '@sett/logger';
import { createTestDatabase, freePort, uniqueName, type TestDatabase } from '@sett/testing';
import { createDecideApp, type DecideApp, type DecideConfig } from '../src/app';
import type { GeoIp } from '@sett/geoip';

export const REDIS_URL = process.env.REDIS_URL || 'redis://127.0.0.1:6379';

export interface Harness {
  url: string;
  db: TestDatabase;
  pool: Pool;
  /** Prefixed like the app's client: sees the app's keys. */
  redis: Redis;
  decide: DecideApp;
  service: RunningService;
  stop(): Promise<void>;
}

export async function startHarness(
  opts: {
    db?: TestDatabase;
    redisUrl?: string;
    geoip?: GeoIp;
    subscribe?: boolean;
    config?: Partial<DecideConfig>;
  } = {},
): Promise<Harness> {
  const db = opts.db ?? (await createTestDatabase());
  const pool = createPgPool({ databaseUrl: db.url, max: 5 });
  // Team ids go on the flags-changed channel, which is not prefixed: start this database's ids
  // at a random height so other test files' publications do not name our projects.
  if (!opts.db)
    await pool.query(`SELECT setval('teams_id_seq', $1)`, [
      1_000_000 + Math.floor(Math.random() * 1_000_000_000),
    ]);
  const keyPrefix = `${uniqueName('decide')}:`;
  const redis = createRedis({ url: opts.redisUrl ?? REDIS_URL, keyPrefix });
  const subscriber = opts.subscribe ? createRedis({ url: opts.redisUrl ?? REDIS_URL }) : undefined;
  const logger = createSilentLogger();
  const decide = createDecideApp({
    redis,
    subscriber,
    pool,
    logger,
    registry: createMetricsRegistry('decide'),
    geoip: opts.geoip,
    config: {
      flagCacheTtlMs: 0,
      personCacheTtlMs: 0,
      tokenCacheTtlMs: 0,
      maxBodyBytes: 1024 * 1024,
      ...opts.config,
    },
  });
  await decide.subscribed;
  const service = await startService({
    name: 'decide',
    app: decide.app,
    host: '127.0.0.1',
    port: 0,
    logger,
    shutdownTimeoutMs: 2000,
  });
  return {
    url: `http://127.0.0.1:${service.port}`,
    db,
    pool,
    redis,
    decide,
    service,
    async stop() {
      await service.stop();
      await decide.close();
      subscriber?.disconnect();
      redis.disconnect();
      await pool.end();
      if (!opts.db) await db.drop();
    },
  };
}

export interface Project {
  teamId: number;
  organizationId: string;
  token: string;
}

export async function createProject(
  h: { pool: Pool; redis?: Redis },
  opts: { quota?: number | null; cacheToken?: boolean } = {},
): Promise<Project> {
  const organizationId = randomUUID();
  await h.pool.query(
    'INSERT INTO organizations (id, name, slug, feature_flag_quota) VALUES ($1, $2, $3, $4)',
    [organizationId, 'Org', `org-${organizationId}`, opts.quota ?? null],
  );
  const token = `phc_${randomUUID().replace(/-/g, '')}`;
  const { rows } = await h.pool.query<{ id: number }>(
    'INSERT INTO teams (uuid, organization_id, api_token, name) VALUES (gen_random_uuid(), $1, $2, $3) RETURNING id',
    [organizationId, token, 'Project'],
  );
  const teamId = rows[0]!.id;
  if (opts.cacheToken && h.redis) await writeProjectToken(h.redis, token, { teamId, organizationId });
  return { teamId, organizationId, token };
}

export interface FlagRow {
  key: string;
  filters: unknown;
  name?: string;
  active?: boolean;
  deleted?: boolean;
  ensure_experience_continuity?: boolean;
  version?: number;
}

export async function insertFlag(pool: Pool, teamId: number, flag: FlagRow): Promise<number> {
  const { rows } = await pool.query<{ id: number }>(
    `INSERT INTO feature_flags (team_id, key, name, filters, active, deleted, ensure_experience_continuity, version)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING id`,
    [
      teamId,
      flag.key,
      flag.name ?? '',
      JSON.stringify(flag.filters),
      flag.active ?? true,
      flag.deleted ?? false,
      flag.ensure_experience_continuity ?? false,
      flag.version ?? 1,
    ],
  );
  return rows[0]!.id;
}

export async function insertPerson(
  pool: Pool,
  teamId: number,
  distinctIds: string[],
  properties: Record<string, unknown>,
): Promise<string> {
  const { rows } = await pool.query<{ id: string }>(
    'INSERT INTO persons (uuid, team_id, properties) VALUES (gen_random_uuid(), $1, $2) RETURNING id::text',
    [teamId, JSON.stringify(properties)],
  );
  const personId = rows[0]!.id;
  for (const distinctId of distinctIds) {
    await pool.query(
      'INSERT INTO person_distinct_ids (team_id, distinct_id, person_id) VALUES ($1, $2, $3)',
      [teamId, distinctId, personId],
    );
  }
  return personId;
}

export async function insertGroup(
  pool: Pool,
  teamId: number,
  groupType: string,
  index: number,
  key: string,
  properties: Record<string, unknown>,
) {
  await pool.query(
    'INSERT INTO group_type_mappings (team_id, group_type, group_type_index) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING',
    [teamId, groupType, index],
  );
  await pool.query(
    'INSERT INTO groups (team_id, group_type_index, group_key, group_properties) VALUES ($1, $2, $3, $4)',
    [teamId, index, key, JSON.stringify(properties)],
  );
}

export interface Reply {
  status: number;
  body: Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
  headers: Headers;
}

export async function post(
  url: string,
  path: string,
  body: unknown,
  headers: Record<string, string> = {},
): Promise<Reply> {
  const isRaw = typeof body === 'string' || Buffer.isBuffer(body);
  const res = await fetch(url + path, {
    method: 'POST',
    headers: { ...(isRaw ? {} : { 'content-type': 'application/json' }), ...headers },
    body: isRaw ? (body as string | Buffer) : JSON.stringify(body),
  });
  const text = await res.text();
  let parsed: Record<string, unknown> = {};
  try {
    parsed = JSON.parse(text) as Record<string, unknown>;
  } catch {
    parsed = { raw: text };
  }
  return { status: res.status, body: parsed, headers: res.headers };
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * decide's main.ts as a real process with DECIDE_WORKERS cluster workers (GeoIP off), resolved
 * once every worker and the primary have logged that they are ready. `lines` collects its log;
 * `stop()` sends SIGTERM and resolves with the exit code.
 */
export async function spawnDecideWorkers(
  databaseUrl: string,
  workers: number,
): Promise<{ port: number; lines: string[]; stop(): Promise<number | null> }> {
  const port = await freePort();
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(__dirname, '..', 'src', 'main.ts')], {
    env: {
      ...process.env,
      DATABASE_URL: databaseUrl,
      REDIS_URL,
      DECIDE_PORT: String(port),
      DECIDE_WORKERS: String(workers),
      DECIDE_GEOIP_ENABLED: 'false',
      LOG_FORMAT: 'json',
      LOG_LEVEL: 'info',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const lines: string[] = [];
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  const stop = async () => {
    child.kill('SIGTERM');
    return exited;
  };
  try {
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`workers not ready:\n${lines.join('\n')}`)), 30_000);
      void exited.then((code) => reject(new Error(`decide exited with ${code}:\n${lines.join('\n')}`)));
      for (const s of [child.stdout!, child.stderr!]) {
        readline.createInterface({ input: s }).on('line', (l) => {
          lines.push(l);
          const workersReady = lines.filter((x) => x.includes('"message":"decide worker ready"')).length;
          if (workersReady === workers && lines.some((x) => x.includes('"message":"decide ready"'))) {
            clearTimeout(timer);
            resolve();
          }
        });
      }
    });
  } catch (err) {
    await stop();
    throw err;
  }
  return { port, lines, stop };
}
