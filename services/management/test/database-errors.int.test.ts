// Database errors become meaningful answers: real pg and Prisma errors go through the one
// mapping (database-errors.ts), and a Postgres that stops answering, behind a TCP proxy that
// swallows every byte, gives 503 unavailable_error with Retry-After within the configured
// timeouts instead of a 500 or a hang; when it answers again, so does management.
import { createRedis, type Redis } from '@sett/cache';
import { createPgPool, createPrisma, type PrismaClient } from '@sett/db';
import type { RunningService } from '@sett/http';
import {
  createTestDatabase,
  startTcpProxy,
  uniqueName,
  type TcpProxy,
  type TestDatabase,
} from '@sett/testing';
import type pg from 'pg';
import { toDatabaseSettError } from '../src/database-errors';
import { call, createKey, seed, serveManagement, type Fixture } from './helpers';

const TIMEOUTS = { connectTimeoutMs: 800, statementTimeoutMs: 800, idleInTransactionTimeoutMs: 0 };
// Client-side query timeout is statement + 1 s; connect 0.8 s: an answer within 4 s is bounded.
const BOUND_MS = 4000;

let db: TestDatabase;
let direct: PrismaClient;
let f: Fixture;
let key: string;

beforeAll(async () => {
  db = await createTestDatabase();
  direct = createPrisma({ databaseUrl: db.url, maxConnections: 2 });
  f = await seed(direct);
  key = await createKey(direct, f.alice.id, ['*']);
});
afterAll(async () => {
  await direct.$disconnect();
  await db.drop();
});

describe('real database errors through the mapping', () => {
  let pool: pg.Pool;
  beforeAll(() => {
    pool = createPgPool({ databaseUrl: db.url, max: 2 });
  });
  afterAll(() => pool.end());

  test('Prisma P2025 (record to update not found) → 404', async () => {
    const err = await direct.user
      .update({ where: { id: 2_000_000_000 }, data: { firstName: 'x' } })
      .catch((e) => e);
    expect(toDatabaseSettError(err)).toMatchObject({ status: 404 });
  });

  test('Prisma P2002 (unique violation) → 409 naming the field', async () => {
    const alice = await direct.user.findUniqueOrThrow({ where: { id: f.alice.id } });
    const err = await direct.user
      .update({ where: { id: f.bob.id }, data: { email: alice.email } })
      .catch((e) => e);
    expect(toDatabaseSettError(err)).toMatchObject({ status: 409, attr: 'email' });
  });

  test('pg statement timeout (57014) → 504: the work was too large, the database is there', async () => {
    const client = await pool.connect();
    try {
      await client.query('SET statement_timeout = 50');
      const err = await client.query('SELECT pg_sleep(5)').catch((e) => e);
      expect(err.code).toBe('57014');
      const mapped = toDatabaseSettError(err);
      expect(mapped).toMatchObject({ status: 504, type: 'server_error', code: 'timeout' });
    } finally {
      await client.query('RESET statement_timeout');
      client.release();
    }
  });

  test('pg data exception (22xxx) → 400; an unrelated error is left alone', async () => {
    const err = await pool.query("SELECT '99999-99-99'::date").catch((e) => e);
    expect(err.code).toMatch(/^22/);
    expect(toDatabaseSettError(err)).toMatchObject({ status: 400, type: 'validation_error' });
    const syntax = await pool.query('SELEC 1').catch((e) => e);
    expect(toDatabaseSettError(syntax)).toBeUndefined();
    expect(toDatabaseSettError(new Error('boom'))).toBeUndefined();
  });
});

describe('a Postgres that stops answering', () => {
  let proxy: TcpProxy;
  let pool: pg.Pool;
  let prisma: PrismaClient;
  let redis: Redis;
  let service: RunningService;
  let url: string;

  beforeAll(async () => {
    const target = new URL(db.url);
    proxy = await startTcpProxy({ host: target.hostname, port: Number(target.port || 5432) });
    const proxied = new URL(db.url);
    proxied.port = String(proxy.port);
    pool = createPgPool({ databaseUrl: proxied.toString(), max: 2, timeouts: TIMEOUTS });
    pool.on('error', () => undefined);
    prisma = createPrisma({ databaseUrl: proxied.toString(), maxConnections: 2, timeouts: TIMEOUTS });
    redis = createRedis({
      url: process.env.REDIS_URL || 'redis://127.0.0.1:6379',
      keyPrefix: `${uniqueName('mgmt')}:`,
    });
    ({ url, service } = await serveManagement({
      prisma,
      pool,
      redis,
      // Long key cache: once authenticated, requests reach the handlers' own queries.
      config: { authCacheTtlMs: 600_000 },
    }));
  });
  afterAll(async () => {
    await service.stop();
    await proxy.close();
    await prisma.$disconnect().catch(() => undefined);
    await pool.end().catch(() => undefined);
    redis.disconnect();
  });

  async function timed(method: string, path: string, body?: unknown) {
    const started = Date.now();
    const reply = await call({ url }, method, path, key, body);
    return { ...reply, ms: Date.now() - started };
  }

  function expectUnavailable(r: Awaited<ReturnType<typeof timed>>) {
    expect({ status: r.status, body: r.body }).toMatchObject({
      status: 503,
      body: { type: 'unavailable_error', code: 'service_unavailable', attr: null },
    });
    expect(typeof r.body.detail).toBe('string');
    expect(Number(r.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(r.ms).toBeLessThan(BOUND_MS);
  }

  test('503 within the timeouts on every path (pg reads, Prisma writes, new connections), then recovers', async () => {
    // Warm: authenticated (cached), and both pools hold open connections.
    expect((await timed('GET', '/api/users/@me/')).status).toBe(200);
    expect((await timed('PATCH', '/api/users/@me/', { first_name: 'Warm' })).status).toBe(200);

    proxy.silence();
    // Open connections whose queries are never answered: the client-side query timeout.
    expectUnavailable(await timed('GET', '/api/users/@me/'));
    expectUnavailable(await timed('PATCH', '/api/users/@me/', { first_name: 'Lost' }));
    expectUnavailable(await timed('GET', `/api/projects/${f.teamA.id}/events/`));
    expectUnavailable(await timed('GET', '/api/projects/'));
    // By now connections have been dropped and new ones are accepted but never answered: the
    // connect timeout.
    expectUnavailable(await timed('GET', `/api/projects/${f.teamA.id}/persons/`));
    expectUnavailable(
      await timed('POST', `/api/projects/${f.teamA.id}/feature_flags/`, { key: 'while-down' }),
    );

    proxy.forward();
    const back = await timed('GET', '/api/users/@me/');
    expect(back.status).toBe(200);
    expect(back.body.first_name).toBe('Warm');
  });
});
