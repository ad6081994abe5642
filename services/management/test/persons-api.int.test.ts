// Persons API: GET and DELETE one person, bulk_delete by uuid or distinct id, deletion jobs read
// back through .../persons/deletions/, scopes, other organizations' projects, bad input, and
// data_retention_days through PATCH /api/projects/:id/. A real job runner (short poll) deletes
// events; persons and events are written with SQL as ingestion writes them.
import { randomUUID } from 'node:crypto';
import { createBackgroundJobs } from '../src/jobs/background-jobs';
import type { JobRunner } from '../src/jobs/job-runner';
import { uuidv7At } from '../src/retention/partition-plan';
import { createSilentLogger } from '@sett/logger';
import { waitFor } from '@sett/testing';
import { call, createKey, seed, startHarness, type Fixture, type Harness } from './helpers';

let h: Harness;
let f: Fixture;
let runner: JobRunner;
let writeKey: string;
let readKey: string;
let projectOnlyKey: string;
let bobKey: string;
let adminKey: string;

beforeAll(async () => {
  h = await startHarness();
  f = await seed(h.prisma);
  writeKey = await createKey(h.prisma, f.alice.id, ['person:write', 'project:write']);
  readKey = await createKey(h.prisma, f.alice.id, ['person:read']);
  projectOnlyKey = await createKey(h.prisma, f.alice.id, ['project:read']);
  bobKey = await createKey(h.prisma, f.bob.id, ['*']);
  adminKey = await createKey(h.prisma, f.adminA.id, ['project:write']);
  runner = createBackgroundJobs({
    pool: h.pool,
    logger: createSilentLogger(),
    config: {
      pollIntervalMs: 50,
      leaseMs: 10_000,
      retentionIntervalMs: 3_600_000,
      personDeletionSettleMs: 0,
    },
  });
  runner.start();
});

afterAll(async () => {
  await runner?.stop();
  await h?.stop();
});

/** A person with distinct ids and `events` events per distinct id, as ingestion stores them. */
async function person(teamId: number, distinctIds: string[], properties: object = {}, events = 3) {
  const uuid = randomUUID();
  const { rows } = await h.pool.query<{ id: string }>(
    `INSERT INTO persons (uuid, team_id, properties, is_identified) VALUES ($1, $2, $3, true) RETURNING id`,
    [uuid, teamId, JSON.stringify(properties)],
  );
  for (const d of distinctIds) {
    await h.pool.query(
      `INSERT INTO person_distinct_ids (team_id, distinct_id, person_id) VALUES ($1, $2, $3)`,
      [teamId, d, rows[0]!.id],
    );
    await insertEvents(teamId, d, uuid, events);
  }
  return { uuid, id: rows[0]!.id };
}

async function insertEvents(teamId: number, distinctId: string, personUuid: string | null, n: number) {
  for (let i = 0; i < n; i++) {
    // Half v7 (monthly partitions), half v4 (the default partition).
    const uuid = i % 2 === 0 ? uuidv7At(Date.now() - i * 1000) : randomUUID();
    await h.pool.query(
      `INSERT INTO events (uuid, team_id, event, distinct_id, person_id, timestamp) VALUES ($1, $2, 'e', $3, $4, now() - $5 * interval '1 second')`,
      [uuid, teamId, distinctId, personUuid, i],
    );
  }
}

async function eventCount(teamId: number, distinctIds: string[]) {
  const { rows } = await h.pool.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM events WHERE team_id = $1 AND distinct_id = ANY($2)`,
    [teamId, distinctIds],
  );
  return rows[0]!.n;
}

function waitForJob(location: string, key = readKey) {
  return waitFor(
    `job ${location} to finish`,
    async () => {
      const res = await call(h, 'GET', location, key);
      expect(res.status).toBe(200);
      return (res.body.status === 'succeeded' || res.body.status === 'failed') && res.body;
    },
    { timeoutMs: 20_000 },
  );
}

describe('GET /api/projects/:id/persons/:uuid/', () => {
  it('answers the person with its distinct ids, 404 for unknown, malformed or other projects', async () => {
    const p = await person(f.teamA.id, ['get-1', 'get-2'], { email: 'g@x.test' }, 0);
    const res = await call(h, 'GET', `/api/projects/${f.teamA.id}/persons/${p.uuid}/`, readKey);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      id: p.uuid,
      uuid: p.uuid,
      distinct_ids: ['get-1', 'get-2'],
      properties: { email: 'g@x.test' },
      is_identified: true,
      created_at: expect.any(String),
    });
    expect(
      (await call(h, 'GET', `/api/projects/${f.teamA.id}/persons/${randomUUID()}/`, readKey)).status,
    ).toBe(404);
    expect((await call(h, 'GET', `/api/projects/${f.teamA.id}/persons/not-a-uuid/`, readKey)).status).toBe(
      404,
    );
    // The same person through another project of the organization, and through another organization.
    expect((await call(h, 'GET', `/api/projects/${f.teamA2.id}/persons/${p.uuid}/`, readKey)).status).toBe(
      404,
    );
    expect((await call(h, 'GET', `/api/projects/${f.teamA.id}/persons/${p.uuid}/`, bobKey)).status).toBe(404);
  });

  it('needs person:read', async () => {
    const p = await person(f.teamA.id, ['scope-1'], {}, 0);
    const res = await call(h, 'GET', `/api/projects/${f.teamA.id}/persons/${p.uuid}/`, projectOnlyKey);
    expect(res.status).toBe(403);
    expect(res.body).toMatchObject({ type: 'authentication_error', code: 'permission_denied' });
  });
});

describe('DELETE /api/projects/:id/persons/:uuid/', () => {
  it('removes the person and distinct ids at once and, with delete_events, their events in a job', async () => {
    const p = await person(f.teamA.id, ['del-1', 'del-2'], { email: 'd@x.test' }, 4);
    const other = await person(f.teamA.id, ['keep-1'], {}, 4);
    // Same distinct id in the organization's other project: not touched.
    await person(f.teamA2.id, ['del-1'], {}, 2);

    const res = await call(
      h,
      'DELETE',
      `/api/projects/${f.teamA.id}/persons/${p.uuid}/?delete_events=true`,
      writeKey,
    );
    expect(res.status).toBe(202);
    expect(res.body).toBeUndefined();
    const location = res.headers.get('location')!;
    expect(location).toMatch(new RegExp(`^/api/projects/${f.teamA.id}/persons/deletions/\\d+/$`));

    // Gone before the job runs: no person, no distinct id.
    expect((await call(h, 'GET', `/api/projects/${f.teamA.id}/persons/${p.uuid}/`, readKey)).status).toBe(
      404,
    );
    const ids = await h.pool.query(
      `SELECT 1 FROM person_distinct_ids WHERE team_id = $1 AND distinct_id IN ('del-1', 'del-2')`,
      [f.teamA.id],
    );
    expect(ids.rowCount).toBe(0);

    const job = await waitForJob(location);
    expect(job).toMatchObject({
      status: 'succeeded',
      phase: 'done',
      delete_events: true,
      distinct_id_count: 2,
      events_deleted: 8,
    });
    expect(job).not.toHaveProperty('distinct_ids');
    expect(await eventCount(f.teamA.id, ['del-1', 'del-2'])).toBe(0);
    expect(await eventCount(f.teamA.id, ['keep-1'])).toBe(4);
    expect(await eventCount(f.teamA2.id, ['del-1'])).toBe(2);
    expect((await call(h, 'GET', `/api/projects/${f.teamA.id}/persons/${other.uuid}/`, readKey)).status).toBe(
      200,
    );
    // The job row no longer names the erased distinct ids.
    const row = await h.pool.query(`SELECT payload FROM background_jobs WHERE id = $1`, [
      location.split('/')[6],
    ]);
    expect(JSON.stringify(row.rows[0].payload)).not.toContain('del-1');
  });

  it('keeps the events without delete_events', async () => {
    const p = await person(f.teamA.id, ['nodel-1'], {}, 3);
    const res = await call(h, 'DELETE', `/api/projects/${f.teamA.id}/persons/${p.uuid}/`, writeKey);
    expect(res.status).toBe(202);
    const job = await waitForJob(res.headers.get('location')!);
    expect(job).toMatchObject({ status: 'succeeded', delete_events: false, events_deleted: 0 });
    expect(await eventCount(f.teamA.id, ['nodel-1'])).toBe(3);
  });

  it('refuses bad input, missing scope and other organizations with 4xx JSON', async () => {
    const p = await person(f.teamA.id, ['bad-1'], {}, 0);
    const path = `/api/projects/${f.teamA.id}/persons/${p.uuid}/`;
    const bad = await call(h, 'DELETE', `${path}?delete_events=maybe`, writeKey);
    expect(bad.status).toBe(400);
    expect(bad.body).toMatchObject({ type: 'validation_error', attr: 'delete_events' });
    expect((await call(h, 'DELETE', path, readKey)).status).toBe(403);
    expect((await call(h, 'DELETE', path, bobKey)).status).toBe(404);
    expect(
      (await call(h, 'DELETE', `/api/projects/${f.teamA.id}/persons/${randomUUID()}/`, writeKey)).status,
    ).toBe(404);
    // Still there after all of that.
    expect((await call(h, 'GET', path, readKey)).status).toBe(200);
    const jobs = await h.pool.query(
      `SELECT 1 FROM background_jobs WHERE kind = 'person_deletion' AND payload::text LIKE '%bad-1%'`,
    );
    expect(jobs.rowCount).toBe(0);
  });
});

describe('POST /api/projects/:id/persons/bulk_delete/', () => {
  it('deletes by distinct id, also the events of a distinct id that has no person', async () => {
    const p = await person(f.teamA.id, ['bulk-1', 'bulk-2'], {}, 2);
    await insertEvents(f.teamA.id, 'personless-1', null, 3);
    const res = await call(h, 'POST', `/api/projects/${f.teamA.id}/persons/bulk_delete/`, writeKey, {
      distinct_ids: ['bulk-1', 'personless-1'],
      delete_events: true,
    });
    expect(res.status).toBe(202);
    const job = await waitForJob(res.headers.get('location')!);
    // bulk-2 belongs to the same person: it goes too.
    expect(job).toMatchObject({ status: 'succeeded', distinct_id_count: 3, events_deleted: 7 });
    expect((await call(h, 'GET', `/api/projects/${f.teamA.id}/persons/${p.uuid}/`, readKey)).status).toBe(
      404,
    );
    expect(await eventCount(f.teamA.id, ['bulk-1', 'bulk-2', 'personless-1'])).toBe(0);
  });

  it('deletes by person uuid (ids), delete_events also as a query parameter', async () => {
    const a = await person(f.teamA.id, ['ids-1'], {}, 2);
    const b = await person(f.teamA.id, ['ids-2'], {}, 2);
    const res = await call(
      h,
      'POST',
      `/api/projects/${f.teamA.id}/persons/bulk_delete/?delete_events=true`,
      writeKey,
      {
        ids: [a.uuid, b.uuid.toUpperCase()],
      },
    );
    expect(res.status).toBe(202);
    expect(await waitForJob(res.headers.get('location')!)).toMatchObject({
      status: 'succeeded',
      events_deleted: 4,
    });
    expect(await eventCount(f.teamA.id, ['ids-1', 'ids-2'])).toBe(0);
  });

  it('answers 202 without a job when nothing matches', async () => {
    const res = await call(h, 'POST', `/api/projects/${f.teamA.id}/persons/bulk_delete/`, writeKey, {
      ids: [randomUUID()],
    });
    expect(res.status).toBe(202);
    expect(res.headers.get('location')).toBeNull();
  });

  it.each([
    ['neither ids nor distinct_ids', {}, 'ids'],
    ['empty ids', { ids: [] }, 'ids'],
    ['an id that is not a uuid', { ids: ['nope'] }, 'ids'],
    ['1001 distinct ids', { distinct_ids: Array.from({ length: 1001 }, (_, i) => `d${i}`) }, 'distinct_ids'],
    ['an empty distinct id', { distinct_ids: [''] }, 'distinct_ids'],
    ['delete_events not a boolean', { distinct_ids: ['x'], delete_events: 'yes' }, 'delete_events'],
  ])('400 for %s', async (_label, body, attr) => {
    const res = await call(h, 'POST', `/api/projects/${f.teamA.id}/persons/bulk_delete/`, writeKey, body);
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ type: 'validation_error' });
    expect(String(res.body.attr)).toContain(attr);
  });

  it('needs person:write and the caller organization', async () => {
    const body = { distinct_ids: ['x'] };
    expect(
      (await call(h, 'POST', `/api/projects/${f.teamA.id}/persons/bulk_delete/`, readKey, body)).status,
    ).toBe(403);
    expect(
      (await call(h, 'POST', `/api/projects/${f.teamA.id}/persons/bulk_delete/`, bobKey, body)).status,
    ).toBe(404);
  });
});

describe('deletion jobs', () => {
  it('lists the project deletions, newest first; other projects and ids are 404', async () => {
    const p = await person(f.teamA.id, ['list-1'], {}, 0);
    const res = await call(h, 'DELETE', `/api/projects/${f.teamA.id}/persons/${p.uuid}/`, writeKey);
    const id = Number(res.headers.get('location')!.split('/')[6]);
    const list = await call(h, 'GET', `/api/projects/${f.teamA.id}/persons/deletions/`, readKey);
    expect(list.status).toBe(200);
    expect(list.body.results[0].id).toBe(id);
    expect(list.body.count).toBeGreaterThanOrEqual(1);
    expect(
      (await call(h, 'GET', `/api/projects/${f.teamA2.id}/persons/deletions/${id}/`, readKey)).status,
    ).toBe(404);
    expect(
      (await call(h, 'GET', `/api/projects/${f.teamA.id}/persons/deletions/${id}/`, bobKey)).status,
    ).toBe(404);
    expect((await call(h, 'GET', `/api/projects/${f.teamA.id}/persons/deletions/abc/`, readKey)).status).toBe(
      404,
    );
    expect(
      (await call(h, 'GET', `/api/projects/${f.teamA.id}/persons/deletions/`, projectOnlyKey)).status,
    ).toBe(403);
  });
});

describe('data_retention_days', () => {
  it('is refused to a plain member: shortening it deletes data', async () => {
    const res = await call(h, 'PATCH', `/api/projects/${f.teamA.id}/`, writeKey, { data_retention_days: 1 });
    expect(res.status).toBe(403);
    expect(res.body.detail).toMatch(/organization admin/);
    expect(
      (await h.prisma.team.findUniqueOrThrow({ where: { id: f.teamA.id } })).dataRetentionDays,
    ).toBeNull();
  });

  it('is read and written through the project by an admin', async () => {
    const path = `/api/projects/${f.teamA.id}/`;
    const writeKey = adminKey;
    expect((await call(h, 'GET', path, writeKey)).body.data_retention_days).toBeNull();
    const set = await call(h, 'PATCH', path, writeKey, { data_retention_days: 30 });
    expect(set.status).toBe(200);
    expect(set.body.data_retention_days).toBe(30);
    expect((await call(h, 'GET', path, writeKey)).body.data_retention_days).toBe(30);
    for (const bad of [0, -1, 1.5, 'x', 36501]) {
      const res = await call(h, 'PATCH', path, writeKey, { data_retention_days: bad });
      expect(res.status).toBe(400);
      expect(res.body).toMatchObject({ type: 'validation_error' });
    }
    expect(
      (await call(h, 'PATCH', path, writeKey, { data_retention_days: null })).body.data_retention_days,
    ).toBeNull();
  });
});
