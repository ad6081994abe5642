// The whole Sett stack exactly as `pnpm start` brings it up: scripts/start.ts in a child
// process (its own Kafka development broker, the four services, the edge, the bootstrap of a
// default project on an empty database), on a fresh test database and free local ports. The
// SDKs under test talk to the edge URL it prints, nothing else.
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { createTestDatabase, endPool, type TestDatabase, freePort } from '@sett/testing';

const root = path.resolve(__dirname, '../../..');

export interface SettStack {
  /** The edge, as `pnpm start` prints it: http://127.0.0.1:<port>. */
  edgeUrl: string;
  edgePort: number;
  projectKey: string;
  personalKey: string;
  projectId: number;
  /** The first user's console sign-in, as start.ts created it (its credentials file). */
  consoleEmail: string;
  consolePassword: string;
  db: TestDatabase;
  pool: pg.Pool;
  /** Everything scripts/start.ts and its services wrote, for failure messages. */
  output(): string;
  stop(): Promise<void>;
}

export async function waitFor<T>(
  what: string,
  check: () => Promise<T | undefined | null | false>,
  timeoutMs = 30_000,
  describe?: () => string | Promise<string>,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  for (;;) {
    try {
      const value = await check();
      if (value) return value;
    } catch (error) {
      lastError = error;
    }
    if (Date.now() > deadline) {
      const extra = describe ? `\n${await describe()}` : '';
      const err = lastError ? `\nlast error: ${(lastError as Error).message}` : '';
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${err}${extra}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}

export async function startSettStack(): Promise<SettStack> {
  const db = await createTestDatabase();
  const pool = new pg.Pool({ connectionString: db.url, max: 3 });
  // Team ids name Redis keys and pub/sub channels that the services do not prefix per database:
  // start this database's ids away from every other test file's projects (as packages/hostile).
  await pool.query(`SELECT setval('teams_id_seq', $1)`, [
    2_000_000 + Math.floor(Math.random() * 1_000_000_000),
  ]);
  const ports = {
    edge: await freePort(),
    management: await freePort(),
    capture: await freePort(),
    decide: await freePort(),
    ingestion: await freePort(),
  };
  let output = '';
  // stdout is a pipe here, so start.ts writes the personal API key to this file, not the output.
  const credentialsDir = fs.mkdtempSync(path.join(os.tmpdir(), 'sett-e2e-'));
  const credentialsFile = path.join(credentialsDir, 'credentials.json');
  const child: ChildProcess = spawn(
    process.execPath,
    ['--import', 'tsx', path.join(root, 'scripts/start.ts')],
    {
      cwd: root,
      env: {
        ...process.env,
        NODE_ENV: 'development',
        DATABASE_URL: db.url,
        KAFKA_BROKERS: '', // start.ts starts its own development broker, as `pnpm start` does
        SETT_STARTED_NOTE: '', // the shared Postgres and Redis are not this stack's to stop
        // Every test stack signs in from 127.0.0.1 against the same Redis, where failed sign-ins
        // are counted per address for 15 minutes: the browser tests' deliberate failures must not
        // add up to a lockout across runs. (The lockout itself: services/management sessions tests.)
        LOGIN_MAX_FAILURES_PER_IP: '100000',
        HOST: '127.0.0.1',
        SETT_PORT: String(ports.edge),
        MANAGEMENT_PORT: String(ports.management),
        CAPTURE_PORT: String(ports.capture),
        DECIDE_PORT: String(ports.decide),
        INGESTION_PORT: String(ports.ingestion),
        LOG_LEVEL: 'warn',
        DATABASE_POOL_SIZE: '4',
        INGESTION_MAX_WAIT_MS: '100',
        SHUTDOWN_TIMEOUT_MS: '3000',
        SETT_CREDENTIALS_FILE: credentialsFile,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  const keep = (d: Buffer) => {
    output += d.toString();
    if (output.length > 200_000) output = output.slice(-100_000);
  };
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));

  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGINT');
      const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
      await exited;
      clearTimeout(timer);
    }
    await endPool(pool);
    await db.drop();
    fs.rmSync(credentialsDir, { recursive: true, force: true });
  };

  try {
    await waitFor(
      '`pnpm start` (scripts/start.ts) to come up',
      async () => {
        if (child.exitCode !== null) throw new Error(`start.ts exited with ${child.exitCode}`);
        return output.includes('Press Ctrl-C to stop.');
      },
      120_000,
      () => output,
    );
  } catch (error) {
    await stop();
    throw error;
  }
  const projectKey = /project API key\s+(phc_\w+)/.exec(output)?.[1];
  const credentials = fs.existsSync(credentialsFile)
    ? (JSON.parse(fs.readFileSync(credentialsFile, 'utf8')) as {
        personal_api_key?: string;
        email?: string;
        console_password?: string;
      })
    : {};
  const personalKey = credentials.personal_api_key;
  const projectId = Number(/project id\s+(\d+)/.exec(output)?.[1]);
  const edgeUrl = /Edge: (http:\/\/[^\s]+)/.exec(output)?.[1];
  if (!projectKey || !personalKey || !projectId || !edgeUrl || !credentials.console_password) {
    await stop();
    throw new Error(`could not read the keys and edge URL that start.ts printed:\n${output}`);
  }
  return {
    edgeUrl,
    edgePort: ports.edge,
    projectKey,
    personalKey,
    projectId,
    consoleEmail: credentials.email ?? '',
    consolePassword: credentials.console_password ?? '',
    db,
    pool,
    output: () => output,
    stop,
  };
}

export interface StoredEvent {
  event: string;
  distinct_id: string;
  properties: Record<string, unknown>;
}

/** Events stored for these distinct ids (any event name when `events` is omitted). */
export async function storedEvents(
  stack: SettStack,
  distinctIds: string[],
  events?: string[],
): Promise<StoredEvent[]> {
  const { rows } = await stack.pool.query<StoredEvent>(
    `SELECT event, distinct_id, properties FROM events
      WHERE team_id = $1 AND distinct_id = ANY($2) AND ($3::text[] IS NULL OR event = ANY($3))
      ORDER BY timestamp`,
    [stack.projectId, distinctIds, events ?? null],
  );
  return rows;
}
