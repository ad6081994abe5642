// What one /query/ request may cost others, against real Postgres and Redis: the whole request's
// deadline (504, and the statement cancelled in Postgres), the caps per user, per project and in
// all held in Redis across two replicas, the query pool apart from the one serving key checks
// and /_ready, a client that leaves stopping its statement, and the values and patterns that
// used to break a filter (stored numbers and dates the casts cannot hold, RE2 patterns Postgres
// cannot run). Queries are held in Postgres by a lock on the events table, taken by the test:
// a statement waits on it deterministically, with no timing involved.
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { createRedis, type Redis } from '@sett/cache';
import { createPgPool, createPrisma, type PrismaClient } from '@sett/db';
import { createTestDatabase, uniqueName, waitFor, type TestDatabase } from '@sett/testing';
import { call, createKey, seed, serveManagement, type Fixture } from './helpers';

let db: TestDatabase;
let prisma: PrismaClient;
let pool: pg.Pool;
let queryPool: pg.Pool;
let redis: Redis;
let f: Fixture;
let replicas: Array<{ url: string; stop(): Promise<void> }> = [];
let aliceKey: string;
let adminKey: string;
let bobKey: string;
const TIMEOUT_MS = 1500;

beforeAll(async () => {
  db = await createTestDatabase();
  prisma = createPrisma({ databaseUrl: db.url, maxConnections: 4 });
  pool = createPgPool({ databaseUrl: db.url, max: 3, applicationName: 'test-management' });
  queryPool = createPgPool({ databaseUrl: db.url, max: 4, applicationName: 'test-management-query' });
  redis = createRedis({
    url: process.env.REDIS_URL || 'redis://127.0.0.1:6379',
    keyPrefix: `${uniqueName('mgmt')}:`,
  });
  f = await seed(prisma);
  aliceKey = await createKey(prisma, f.alice.id, ['query:read']);
  adminKey = await createKey(prisma, f.adminA.id, ['query:read']);
  bobKey = await createKey(prisma, f.bob.id, ['query:read']);
  // Two replicas over the same Redis: the caps are theirs together.
  for (let i = 0; i < 2; i++)
    replicas.push(
      await serveManagement({
        prisma,
        pool,
        queryPool,
        redis,
        config: { query: { timeoutMs: TIMEOUT_MS, maxConcurrent: 3, maxPerUser: 2, maxPerProject: 2 } },
      }),
    );
});

afterAll(async () => {
  for (const r of replicas) await r.stop();
  replicas = [];
  await prisma.$disconnect();
  await pool.end();
  await queryPool.end();
  redis.disconnect();
  await db.drop();
});

const trends = (replica: number, key: string, teamId: number, extra: Record<string, unknown> = {}) =>
  call(replicas[replica]!, 'POST', `/api/projects/${teamId}/query/`, key, {
    query: { kind: 'TrendsQuery', series: [{ kind: 'EventsNode', event: 'e' }], ...extra },
    // Computed every time: these tests are about running queries, not about the result cache.
    refresh: 'force_blocking',
  });

/** Holds the events table until released: every query statement waits on it. */
async function lockEvents(): Promise<() => Promise<void>> {
  const client = new pg.Client({ connectionString: db.url });
  await client.connect();
  await client.query('BEGIN');
  await client.query('LOCK TABLE events IN ACCESS EXCLUSIVE MODE');
  return async () => {
    await client.query('COMMIT');
    await client.end();
  };
}

/** Statements of the query pool waiting or running now. */
async function queryStatements(): Promise<number> {
  const { rows } = await pool.query<{ n: string }>(
    `SELECT count(*) AS n FROM pg_stat_activity
      WHERE application_name = 'test-management-query' AND state = 'active'`,
  );
  return Number(rows[0]!.n);
}

describe('one deadline per request', () => {
  it('answers 504 query_timeout at QUERY_TIMEOUT_MS, with its statement cancelled in Postgres', async () => {
    const release = await lockEvents();
    try {
      const started = Date.now();
      const res = await trends(0, aliceKey, f.teamA.id);
      expect(res.status).toBe(504);
      expect(res.body).toMatchObject({ type: 'server_error', code: 'query_timeout' });
      expect(Date.now() - started).toBeGreaterThanOrEqual(TIMEOUT_MS - 50);
      // Nothing of it is left waiting on the lock.
      expect(await queryStatements()).toBe(0);
    } finally {
      await release();
    }
  });

  it('keeps /_ready and key checks off the query pool: both answer while queries wait', async () => {
    const release = await lockEvents();
    try {
      const waiting = [trends(0, aliceKey, f.teamA.id), trends(1, bobKey, f.teamB.id)];
      await waitFor('both queries waiting on the lock', async () => (await queryStatements()) === 2);
      const ready = await fetch(`${replicas[0]!.url}/_ready`);
      expect(ready.status).toBe(200);
      const me = await call(
        replicas[0]!,
        'GET',
        '/api/users/@me/',
        await createKey(prisma, f.alice.id, ['user:read']),
      );
      expect(me.status).toBe(200);
      expect((await Promise.all(waiting)).map((r) => r.status)).toEqual([504, 504]);
    } finally {
      await release();
    }
  });

  it('stops the statement of a client that went away', async () => {
    const release = await lockEvents();
    try {
      const gone = new AbortController();
      const request = fetch(`${replicas[0]!.url}/api/projects/${f.teamA.id}/query/`, {
        method: 'POST',
        headers: { authorization: `Bearer ${aliceKey}`, 'content-type': 'application/json' },
        body: JSON.stringify({ query: { kind: 'TrendsQuery', series: [{ kind: 'EventsNode' }] } }),
        signal: gone.signal,
      }).catch(() => undefined);
      await waitFor('the query waiting', async () => (await queryStatements()) === 1);
      gone.abort();
      await request;
      // Well before the deadline would have ended it.
      await waitFor('the statement cancelled', async () => (await queryStatements()) === 0, {
        timeoutMs: TIMEOUT_MS / 2,
      });
    } finally {
      await release();
    }
  });
});

describe('caps held in Redis, over both replicas', () => {
  it('refuses a user past QUERY_MAX_PER_USER with 429 at once, and serves another user', async () => {
    const release = await lockEvents();
    try {
      // Alice on both replicas, in two projects: her third query is one too many anywhere.
      const held = [trends(0, aliceKey, f.teamA.id), trends(1, aliceKey, f.teamA2.id)];
      await waitFor('alice holding two slots', async () => (await queryStatements()) === 2);
      const third = await trends(1, aliceKey, f.teamA2.id);
      expect(third.status).toBe(429);
      expect(third.headers.get('retry-after')).toBe('1');
      // Bob, another organization, has a slot (the global cap is 3).
      const bob = trends(0, bobKey, f.teamB.id);
      await waitFor('bob running', async () => (await queryStatements()) === 3);
      // Now all three are taken: the admin of A is refused by the global cap.
      expect((await trends(0, adminKey, f.teamA2.id)).status).toBe(429);
      await release();
      expect((await Promise.all([...held, bob])).map((r) => r.status)).toEqual([200, 200, 200]);
    } finally {
      await release().catch(() => undefined);
    }
  });

  it('refuses a project past QUERY_MAX_PER_PROJECT whoever asks', async () => {
    const release = await lockEvents();
    try {
      const held = [trends(0, aliceKey, f.teamA.id), trends(1, adminKey, f.teamA.id)];
      await waitFor('project A holding two slots', async () => (await queryStatements()) === 2);
      const adminAgain = await trends(0, adminKey, f.teamA.id);
      expect(adminAgain.status).toBe(429);
      await release();
      expect((await Promise.all(held)).map((r) => r.status)).toEqual([200, 200]);
    } finally {
      await release().catch(() => undefined);
    }
  });

  it('gives every slot back, whatever the answer was', async () => {
    // After timeouts, refusals and successes above, the user's full cap is free again.
    const both = await Promise.all([trends(0, aliceKey, f.teamA.id), trends(1, aliceKey, f.teamA.id)]);
    expect(both.map((r) => r.status)).toEqual([200, 200]);
  });
});

describe('filters that used to break', () => {
  beforeAll(async () => {
    const events = [
      { price: '1' + '0'.repeat(400), signup: '2024-02-30' },
      { price: '25', signup: '2024-02-29' },
      { price: 'cheap', signup: 'yesterday' },
      { price: 5, signup: '2023-02-29T10:00:00Z' },
    ];
    for (const properties of events)
      await pool.query(
        `INSERT INTO events (uuid, team_id, event, distinct_id, timestamp, properties)
         VALUES ($1, $2, 'e', 'u', now() - interval '1 hour', $3)`,
        [randomUUID(), f.teamB.id, JSON.stringify(properties)],
      );
  });

  const total = async (properties: unknown[]) => {
    const res = await trends(0, bobKey, f.teamB.id, {
      properties,
      dateRange: { date_from: '-2d' },
      trendsFilter: { display: 'BoldNumber' },
    });
    return { status: res.status, n: res.body?.results?.[0]?.aggregated_value, body: res.body };
  };

  it('a stored number or date the database cannot hold does not match, and breaks nothing', async () => {
    // 1e400 is a number: greater than 10. 25 too. "cheap" is text, compared as text with "10".
    expect(await total([{ key: 'price', value: 10, operator: 'gt' }])).toMatchObject({ status: 200, n: 3 });
    expect(await total([{ key: 'price', value: 10, operator: 'lt' }])).toMatchObject({ status: 200, n: 1 });
    // 2024-02-30 and 2023-02-29 are no days: only 2024-02-29 is after 2024-01-01.
    expect(await total([{ key: 'signup', value: '2024-01-01', operator: 'is_date_after' }])).toMatchObject({
      status: 200,
      n: 1,
    });
  });

  it('compares with a value that is not a number as text (valid SQL, no 500)', async () => {
    // "cheap" > "abc" as text; numbers' text ("1000…", "25", "5") sorts below "abc".
    expect(await total([{ key: 'price', value: 'abc', operator: 'gt' }])).toMatchObject({
      status: 200,
      n: 1,
    });
  });

  it('refuses a date filter whose value is no date with a 400 (never a 503 to retry)', async () => {
    const res = await total([{ key: 'signup', value: 'soon', operator: 'is_date_before' }]);
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ attr: 'query.properties' });
  });

  it.each(['\\pL', 'a{1000}', '(?P<n>a)'])(
    'refuses the RE2 pattern %s, which Postgres cannot run, naming the filter',
    async (pattern) => {
      const res = await total([{ key: 'plan', value: pattern, operator: 'regex' }]);
      expect(res.status).toBe(400);
      expect(res.body.attr).toBe('query.properties');
      expect(res.body.detail).toContain('database cannot run it');
      expect(res.body.detail).toContain('plan');
    },
  );
});
