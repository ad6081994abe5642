// A real management process (main.ts) is SIGKILLed in the middle of a person deletion job: the
// job row stays 'running' under the dead process's lease, and a runner started afterwards (a
// restarted or another replica) claims it once the lease ran out and finishes it. The job is
// held mid-way deterministically: the test locks the events the job must delete, and waits
// until the child's DELETE is seen waiting on that lock.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import path from 'node:path';
import { createPgPool } from '@sett/db';
import { createSilentLogger } from '@sett/logger';
import { createTestDatabase, waitFor, type TestDatabase } from '@sett/testing';
import type pg from 'pg';
import { createBackgroundJobs } from '../src/jobs/background-jobs';
import type { JobRunner } from '../src/jobs/job-runner';
import { enqueueJob, readJob } from '../src/jobs/job-store';

jest.setTimeout(90_000);

const repoRoot = path.resolve(__dirname, '../../..');
let db: TestDatabase;
let pool: pg.Pool;
let child: ChildProcess | undefined;
let runner: JobRunner | undefined;

beforeAll(async () => {
  db = await createTestDatabase();
  pool = createPgPool({ databaseUrl: db.url, max: 4 });
});

afterAll(async () => {
  if (child && child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  await runner?.stop();
  await pool?.end();
  await db?.drop();
});

it('finishes a job whose process was SIGKILLed while running it', async () => {
  const org = randomUUID();
  await pool.query(`INSERT INTO organizations (id, name, slug) VALUES ($1, 'o', $2)`, [org, org]);
  const teamId = (
    await pool.query<{ id: number }>(
      `INSERT INTO teams (uuid, organization_id, api_token, name) VALUES ($1, $2, $3, 't') RETURNING id`,
      [randomUUID(), org, `phc_${randomUUID()}`],
    )
  ).rows[0]!.id;
  await pool.query(
    `INSERT INTO events (uuid, team_id, event, distinct_id, timestamp)
     SELECT gen_random_uuid(), $1, 'e', 'victim', now() - interval '1 hour' FROM generate_series(1, 20)`,
    [teamId],
  );
  const job = (await enqueueJob(pool, {
    kind: 'person_deletion',
    teamId,
    payload: {
      distinct_ids: ['victim'],
      person_uuids: [],
      delete_events: true,
      requested_at: new Date().toISOString(),
    },
  }))!;

  // Hold the events: the child's DELETE will wait here.
  const holder = await pool.connect();
  await holder.query('BEGIN');
  await holder.query(`SELECT 1 FROM events WHERE team_id = $1 AND distinct_id = 'victim' FOR UPDATE`, [
    teamId,
  ]);

  const output: string[] = [];
  child = spawn(process.execPath, ['--import', 'tsx', 'services/management/src/main.ts'], {
    cwd: repoRoot,
    env: {
      ...process.env,
      NODE_ENV: 'test',
      DATABASE_URL: db.url,
      MANAGEMENT_PORT: '0',
      SETT_ENCRYPTION_KEY: randomBytes(32).toString('hex'),
      JOBS_POLL_INTERVAL_MS: '50',
      JOBS_LEASE_MS: '1000',
      PERSON_DELETION_SETTLE_MS: '0',
      LOG_FORMAT: 'json',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout!.on('data', (d: Buffer) => output.push(d.toString()));
  child.stderr!.on('data', (d: Buffer) => output.push(d.toString()));

  // The signal: the child claimed the job and its DELETE waits on the test's lock.
  const blockedPid = await waitFor(
    'the child blocked inside the job',
    async () => {
      const row = await readJob(pool, job.id);
      if (row?.state !== 'running') return false;
      const { rows } = await pool.query<{ pid: number }>(
        `SELECT pid FROM pg_stat_activity
        WHERE datname = current_database() AND application_name = 'sett-management'
          AND wait_event_type = 'Lock' AND query LIKE 'DELETE FROM events%'`,
      );
      return rows[0]?.pid;
    },
    { timeoutMs: 30_000 },
  ).catch((err) => {
    throw new Error(`${(err as Error).message}\n${output.join('')}`);
  });
  const claimed = (await readJob(pool, job.id))!;
  expect(claimed.locked_by).toContain(`:${child.pid}:`);

  child.kill('SIGKILL');
  await new Promise((r) => child!.once('exit', r));
  // Postgres does not notice a dead client while its backend waits on a lock; end it, as TCP
  // keepalive would, then let go of the events.
  await pool.query(`SELECT pg_terminate_backend($1)`, [blockedPid]);
  await holder.query('COMMIT');
  holder.release();

  const left = (await readJob(pool, job.id))!;
  expect(left).toMatchObject({ state: 'running', attempts: 1, locked_by: claimed.locked_by });
  expect(
    Number((await pool.query(`SELECT count(*) AS n FROM events WHERE distinct_id = 'victim'`)).rows[0].n),
  ).toBe(20);

  // A restarted process (here: a runner in the test) takes the job over once the lease is out.
  runner = createBackgroundJobs({
    pool,
    logger: createSilentLogger(),
    config: {
      pollIntervalMs: 50,
      leaseMs: 1000,
      retentionIntervalMs: 3_600_000,
      personDeletionSettleMs: 0,
      workerId: 'restarted',
    },
  });
  runner.start();
  const done = await waitFor(
    'the job finished by the new runner',
    async () => {
      const row = await readJob(pool, job.id);
      return row?.state === 'succeeded' ? row : false;
    },
    { timeoutMs: 30_000 },
  );
  expect(done).toMatchObject({ attempts: 2, progress: { events_deleted: 20, phase: 'done' } });
  expect(
    Number((await pool.query(`SELECT count(*) AS n FROM events WHERE distinct_id = 'victim'`)).rows[0].n),
  ).toBe(0);
});
