// The background job runner on a real database: a job left 'running' by a process that died is
// claimed again once its lease ran out; replicas share the queue without running a job twice;
// failures retry with backoff and end 'failed' with the error; a stopping runner hands its job
// back with its progress; and a soft-deleted project is purged (events, persons, team row).
import { randomUUID } from 'node:crypto';
import { createPgPool } from '@sett/db';
import { createSilentLogger } from '@sett/logger';
import { createTestDatabase, waitFor, type TestDatabase } from '@sett/testing';
import type pg from 'pg';
import { createBackgroundJobs } from '../src/jobs/background-jobs';
import { createJobRunner, type JobHandler, type JobRunner } from '../src/jobs/job-runner';
import { enqueueJob, readJob } from '../src/jobs/job-store';
import { uuidv7At } from '../src/retention/partition-plan';

let db: TestDatabase;
let pool: pg.Pool;
const runners: JobRunner[] = [];

beforeAll(async () => {
  db = await createTestDatabase();
  pool = createPgPool({ databaseUrl: db.url, max: 8 });
});

afterEach(async () => {
  await Promise.all(runners.splice(0).map((r) => r.stop()));
});

afterAll(async () => {
  await pool?.end();
  await db?.drop();
});

function runner(handlers: Record<string, JobHandler>, opts: { leaseMs?: number; workerId?: string } = {}) {
  const r = createJobRunner({
    pool,
    logger: createSilentLogger(),
    handlers,
    pollIntervalMs: 20,
    leaseMs: opts.leaseMs ?? 5_000,
    retryBaseMs: 10,
    workerId: opts.workerId,
  });
  runners.push(r);
  r.start();
  return r;
}

async function waitForState(id: string, states: string[], timeoutMs = 20_000) {
  return waitFor(
    `job ${id} to be ${states.join('/')}`,
    async () => {
      const job = await readJob(pool, id);
      return job && states.includes(job.state) && job;
    },
    { timeoutMs, intervalMs: 20 },
  );
}

it('claims again a job whose process died while running it (lease ran out)', async () => {
  const kind = `k-${randomUUID()}`;
  const job = (await enqueueJob(pool, { kind, payload: { n: 1 } }))!;
  // What a SIGKILLed runner leaves behind: running, attempts 1, its lease in the past, progress.
  await pool.query(
    `UPDATE background_jobs SET state = 'running', attempts = 1, locked_by = 'dead-host:1234',
            locked_until = now() - interval '1 second', started_at = now(), progress = '{"done_steps": 3}'
      WHERE id = $1`,
    [job.id],
  );
  const seen: unknown[] = [];
  const r = runner({
    [kind]: async (j, ctx) => {
      seen.push(j.progress);
      await ctx.step({ done_steps: 4 });
      return { kind: 'done', progress: { done_steps: 5 } };
    },
  });
  const done = await waitForState(job.id, ['succeeded']);
  expect(seen).toEqual([{ done_steps: 3 }]); // resumed from the dead runner's progress
  expect(done).toMatchObject({ attempts: 2, progress: { done_steps: 5 }, locked_by: null });
  expect(r.workerId).not.toBe('dead-host:1234');
});

it('does not take a running job whose lease is still valid', async () => {
  const kind = `k-${randomUUID()}`;
  const job = (await enqueueJob(pool, { kind }))!;
  await pool.query(
    `UPDATE background_jobs SET state = 'running', attempts = 1, locked_by = 'alive', locked_until = now() + interval '1 hour'
      WHERE id = $1`,
    [job.id],
  );
  let ran = false;
  const other = (await enqueueJob(pool, { kind }))!;
  runner({ [kind]: async () => ((ran = true), { kind: 'done', progress: {} }) });
  await waitForState(other.id, ['succeeded']);
  expect(ran).toBe(true);
  expect((await readJob(pool, job.id))!.state).toBe('running');
  expect((await readJob(pool, job.id))!.locked_by).toBe('alive');
});

it('shares the queue between replicas: every job runs exactly once', async () => {
  const kind = `k-${randomUUID()}`;
  const ids = [];
  for (let i = 0; i < 40; i++) ids.push((await enqueueJob(pool, { kind, payload: { i } }))!.id);
  const runs = new Map<string, string[]>();
  const handler =
    (name: string): JobHandler =>
    async (j, ctx) => {
      runs.set(j.id, [...(runs.get(j.id) ?? []), name]);
      await ctx.step({});
      return { kind: 'done', progress: { by: name } };
    };
  runner({ [kind]: handler('a') }, { workerId: 'a' });
  runner({ [kind]: handler('b') }, { workerId: 'b' });
  runner({ [kind]: handler('c') }, { workerId: 'c' });
  for (const id of ids) await waitForState(id, ['succeeded']);
  expect([...runs.values()].every((by) => by.length === 1)).toBe(true);
  expect(runs.size).toBe(40);
});

it('retries a failing job, then marks it failed with the error', async () => {
  const kind = `k-${randomUUID()}`;
  const job = (await enqueueJob(pool, { kind, maxAttempts: 3 }))!;
  let calls = 0;
  runner({
    [kind]: async () => {
      calls++;
      throw new Error(`boom ${calls}`);
    },
  });
  const failed = await waitForState(job.id, ['failed']);
  expect(calls).toBe(3);
  expect(failed).toMatchObject({ attempts: 3, last_error: 'boom 3', dedupe_key: null });
});

it('a stopping runner hands its job back, and another one finishes it from its progress', async () => {
  const kind = `k-${randomUUID()}`;
  const job = (await enqueueJob(pool, { kind }))!;
  let release!: () => void;
  const entered = new Promise<void>((resolve) => (release = resolve));
  let unblock!: () => void;
  const blocked = new Promise<void>((resolve) => (unblock = resolve));
  const first = runner({
    [kind]: async (_j, ctx) => {
      await ctx.step({ step: 1 });
      release();
      await blocked;
      // Step 2 is done: recorded, then the runner, stopping, ends the handler here.
      await ctx.step({ step: 2 });
      throw new Error('unreachable: step() throws while stopping');
    },
  });
  await entered;
  const stopping = first.stop();
  unblock();
  await stopping;
  const back = (await readJob(pool, job.id))!;
  expect(back).toMatchObject({ state: 'queued', locked_by: null, progress: { step: 2 } });

  const seen: unknown[] = [];
  runner({
    [kind]: async (j) => {
      seen.push(j.progress);
      return { kind: 'done', progress: { finished: true } };
    },
  });
  await waitForState(job.id, ['succeeded']);
  expect(seen).toEqual([{ step: 2 }]);
});

it('purges a soft-deleted project and nothing else', async () => {
  const mk = async (deleted: boolean) => {
    const org = randomUUID();
    await pool.query(`INSERT INTO organizations (id, name, slug) VALUES ($1, 'o', $2)`, [org, org]);
    const { rows } = await pool.query<{ id: number }>(
      `INSERT INTO teams (uuid, organization_id, api_token, name, deleted_at) VALUES ($1, $2, $3, 't', $4) RETURNING id`,
      [randomUUID(), org, `phc_${randomUUID()}`, deleted ? new Date() : null],
    );
    const teamId = rows[0]!.id;
    const p = await pool.query<{ id: string }>(
      `INSERT INTO persons (uuid, team_id) VALUES ($1, $2) RETURNING id`,
      [randomUUID(), teamId],
    );
    await pool.query(
      `INSERT INTO person_distinct_ids (team_id, distinct_id, person_id) VALUES ($1, 'u', $2)`,
      [teamId, p.rows[0]!.id],
    );
    await pool.query(`INSERT INTO feature_flags (team_id, key) VALUES ($1, 'f')`, [teamId]);
    for (let i = 0; i < 5; i++) {
      const uuid = i % 2 ? randomUUID() : uuidv7At(Date.now() - i * 86_400_000 * 40);
      await pool.query(
        `INSERT INTO events (uuid, team_id, event, distinct_id, timestamp) VALUES ($1, $2, 'e', 'u', now())`,
        [uuid, teamId],
      );
    }
    return teamId;
  };
  const doomed = await mk(true);
  const kept = await mk(false);
  const jobs = createBackgroundJobs({
    pool,
    logger: createSilentLogger(),
    config: { pollIntervalMs: 20, leaseMs: 5_000, retentionIntervalMs: 3_600_000, personDeletionSettleMs: 0 },
  });
  runners.push(jobs);
  jobs.start();
  await waitFor(
    'the project to be purged',
    async () => (await pool.query(`SELECT 1 FROM teams WHERE id = $1`, [doomed])).rowCount === 0,
    { timeoutMs: 20_000, intervalMs: 20 },
  );
  const count = async (table: string, teamId: number) =>
    (await pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${table} WHERE team_id = $1`, [teamId]))
      .rows[0]!.n;
  for (const table of ['events', 'persons', 'person_distinct_ids', 'feature_flags']) {
    expect(await count(table, doomed)).toBe(0);
    expect(await count(table, kept)).toBeGreaterThan(0);
  }
  const purge = await pool.query(
    `SELECT state, progress FROM background_jobs WHERE kind = 'project_purge' AND team_id = $1`,
    [doomed],
  );
  expect(purge.rows[0]).toMatchObject({
    state: 'succeeded',
    progress: { events_deleted: 5, persons_deleted: 1 },
  });
});

it('counts each attempt by kind and outcome with its duration: retries, then the final failure; a success', async () => {
  const { prom } = await import('@sett/http');
  const { createJobMetrics } = await import('../src/jobs/job-metrics');
  const registry = new prom.Registry();
  const failing = `f-${randomUUID()}`;
  const fine = `s-${randomUUID()}`;
  const metrics = createJobMetrics({
    registry,
    pool,
    logger: createSilentLogger(),
    kinds: [failing, fine],
    periods: {},
  });
  const r = createJobRunner({
    pool,
    logger: createSilentLogger(),
    handlers: {
      [failing]: async () => {
        throw new Error('disk full');
      },
      [fine]: async (_job, ctx) => {
        await ctx.step({ done: 1 });
        return { kind: 'done', progress: { done: 1 } };
      },
    },
    pollIntervalMs: 20,
    retryBaseMs: 10,
    onAttempt: (kind, outcome, seconds) => metrics.observe(kind, outcome, seconds),
  });
  runners.push(r);
  const bad = (await enqueueJob(pool, { kind: failing, maxAttempts: 2 }))!;
  const good = (await enqueueJob(pool, { kind: fine }))!;
  r.start();
  await waitForState(bad.id, ['failed']);
  await waitForState(good.id, ['succeeded']);
  const runs = (await registry.getSingleMetric('sett_background_job_runs_total')!.get()).values;
  const count = (kind: string, outcome: string) =>
    runs.find((v) => v.labels.kind === kind && v.labels.outcome === outcome)?.value;
  expect([count(failing, 'retry'), count(failing, 'failed'), count(failing, 'succeeded')]).toEqual([1, 1, 0]);
  expect([count(fine, 'succeeded'), count(fine, 'failed')]).toEqual([1, 0]);
  const durations = (await registry.getSingleMetric('sett_background_job_duration_seconds')!.get()).values;
  expect(
    durations.find(
      (v) => (v as { metricName?: string }).metricName?.endsWith('_count') && v.labels.kind === failing,
    )?.value,
  ).toBe(2);
});
