// Decide with a Postgres that accepts connections and never answers (a TCP server that reads and
// discards): its pool is given timeouts far longer than the test's limits, so only decide's own
// per-request deadline can explain a timely answer. Tokens and flag lists come from Redis; a
// request needing stored properties answers within the budget with errorsWhileComputingFlags,
// one that gives them answers in full, and what only Postgres could tell (an unknown token, a
// flag list Redis lacks) is a 503, as PostHog's flag service answers when its database is down.
import { randomUUID } from 'node:crypto';
import {
  createRedis,
  redisKeys,
  writeCohortList,
  writeFlagList,
  writeProjectToken,
  type Redis,
} from '@sett/cache';
import { createPgPool } from '@sett/db';
import { createMetricsRegistry, startService, type RunningService } from '@sett/http';
import { createSilentLogger } from '@sett/logger';
import { startTcpProxy, uniqueName, type TcpProxy } from '@sett/testing';
import type { Pool } from 'pg';
import { createDecideApp, type DecideApp } from '../src/app';
import { post, REDIS_URL } from './support';

jest.setTimeout(30_000);

const BUDGET_MS = 300;
// Far above BUDGET_MS and far below the pool's own timeouts (20 s): an answer within this
// proves decide stopped waiting, not the pool.
const ANSWERED_WITHIN_MS = 5_000;

let blackHole: TcpProxy;
let pool: Pool;
let redis: Redis;
let decide: DecideApp;
let service: RunningService;
let url: string;

beforeAll(async () => {
  blackHole = await startTcpProxy(); // no target: accepts and never answers
  const port = blackHole.port;
  pool = createPgPool({
    databaseUrl: `postgres://sett:sett@127.0.0.1:${port}/sett`,
    max: 4,
    timeouts: { connectTimeoutMs: 20_000, statementTimeoutMs: 20_000, idleInTransactionTimeoutMs: 0 },
    onIdleError: () => undefined,
  });
  redis = createRedis({ url: REDIS_URL, keyPrefix: `${uniqueName('decide-pg-hang')}:` });
  const logger = createSilentLogger();
  decide = createDecideApp({
    redis,
    pool,
    logger,
    registry: createMetricsRegistry('decide'),
    config: {
      flagCacheTtlMs: 0,
      personCacheTtlMs: 0,
      tokenCacheTtlMs: 0,
      maxBodyBytes: 1024 * 1024,
      postgresBudgetMs: BUDGET_MS,
    },
  });
  service = await startService({ name: 'decide', app: decide.app, host: '127.0.0.1', port: 0, logger });
  url = `http://127.0.0.1:${service.port}`;
});

afterAll(async () => {
  await service?.stop();
  await decide?.close();
  redis?.disconnect();
  await blackHole?.close();
  // Pending connects end with the destroyed sockets; end() waits for them.
  await pool?.end().catch(() => undefined);
});

let nextTeamId = 2_000_000_000 + Math.floor(Math.random() * 100_000_000);

/** A project whose token and flag list are in Redis, as management writes them. */
async function projectInRedis(opts: { flagList: boolean }) {
  const teamId = nextTeamId++;
  const token = `phc_${randomUUID().replace(/-/g, '')}`;
  await writeProjectToken(redis, token, { teamId, organizationId: randomUUID() });
  if (opts.flagList) {
    await writeFlagList(redis, {
      teamId,
      updatedAt: Date.now(),
      flags: [
        {
          id: 1,
          team_id: teamId,
          key: 'plain',
          filters: { groups: [{ rollout_percentage: 100 }] },
          active: true,
        },
        {
          id: 2,
          team_id: teamId,
          key: 'needs-person',
          filters: {
            groups: [
              { properties: [{ key: 'plan', type: 'person', value: 'pro' }], rollout_percentage: 100 },
            ],
          },
          active: true,
        },
      ],
    });
    await redis.set(redisKeys.groupTypes(teamId), '{}');
  }
  return { teamId, token };
}

async function timed<T>(work: Promise<T>): Promise<{ value: T; ms: number }> {
  const started = performance.now();
  const value = await work;
  return { value, ms: performance.now() - started };
}

it('answers within the budget with errorsWhileComputingFlags when stored properties are needed', async () => {
  const p = await projectInRedis({ flagList: true });
  const { value: res, ms } = await timed(post(url, '/decide/?v=4', { api_key: p.token, distinct_id: 'u1' }));
  expect(res.status).toBe(200);
  expect(res.body.errorsWhileComputingFlags).toBe(true);
  expect(Object.keys(res.body.flags)).toEqual(['plain']);
  expect(res.body.flags.plain.enabled).toBe(true);
  expect(ms).toBeLessThan(ANSWERED_WITHIN_MS);
  // Postgres was really asked (and never answered): the black hole accepted connections.
  expect(blackHole.accepted()).toBeGreaterThan(0);
});

it('evaluates every flag when the request gives the properties', async () => {
  const p = await projectInRedis({ flagList: true });
  const { value: res, ms } = await timed(
    post(url, '/flags/?v=2', { api_key: p.token, distinct_id: 'u2', person_properties: { plan: 'pro' } }),
  );
  expect(res.status).toBe(200);
  expect(res.body.errorsWhileComputingFlags).toBe(false);
  expect(res.body.flags.plain.enabled).toBe(true);
  expect(res.body.flags['needs-person'].enabled).toBe(true);
  expect(ms).toBeLessThan(ANSWERED_WITHIN_MS);
});

it('answers 503 when neither Redis nor Postgres can resolve the token', async () => {
  const token = `phc_${randomUUID().replace(/-/g, '')}`;
  const { value: res, ms } = await timed(post(url, '/decide/?v=4', { api_key: token, distinct_id: 'u3' }));
  expect(res.status).toBe(503);
  expect(res.headers.get('retry-after')).toBe('1');
  expect(res.body).toMatchObject({ type: 'unavailable_error', code: 'service_unavailable' });
  expect(ms).toBeLessThan(ANSWERED_WITHIN_MS);
});

it('answers 503 when Redis has no flag list and Postgres does not answer', async () => {
  const p = await projectInRedis({ flagList: false });
  const { value: res, ms } = await timed(post(url, '/decide/?v=4', { api_key: p.token, distinct_id: 'u4' }));
  expect(res.status).toBe(503);
  expect(ms).toBeLessThan(ANSWERED_WITHIN_MS);
});

it('keeps answering many concurrent requests while every pooled connection hangs', async () => {
  const p = await projectInRedis({ flagList: true });
  const replies = await Promise.all(
    Array.from({ length: 20 }, (_, i) =>
      post(url, '/decide/?v=4', { api_key: p.token, distinct_id: `c${i}` }),
    ),
  );
  for (const res of replies) {
    expect(res.status).toBe(200);
    expect(res.body.errorsWhileComputingFlags).toBe(true);
    expect(Object.keys(res.body.flags)).toEqual(['plain']);
  }
});

it('leaves out a static cohort flag when its membership lookup misses the deadline, keeps the property cohort flag', async () => {
  const teamId = nextTeamId++;
  const token = `phc_${randomUUID().replace(/-/g, '')}`;
  await writeProjectToken(redis, token, { teamId, organizationId: randomUUID() });
  await redis.set(redisKeys.groupTypes(teamId), '{}');
  const on = (id: number) => ({
    groups: [
      { properties: [{ key: 'id', type: 'cohort', value: id, operator: 'in' }], rollout_percentage: 100 },
    ],
  });
  await writeFlagList(redis, {
    teamId,
    updatedAt: Date.now(),
    flags: [
      { id: 1, team_id: teamId, key: 'static-cohort', filters: on(1), active: true },
      { id: 2, team_id: teamId, key: 'property-cohort', filters: on(2), active: true },
    ],
  });
  await writeCohortList(redis, {
    teamId,
    updatedAt: Date.now(),
    cohorts: [
      { id: 1, name: 'listed', is_static: true, filters: {}, version: 1 },
      {
        id: 2,
        name: 'pro',
        is_static: false,
        version: 1,
        filters: { properties: { type: 'AND', values: [{ key: 'plan', type: 'person', value: 'pro' }] } },
      },
    ],
  });
  const { value: res, ms } = await timed(
    post(url, '/flags/?v=2', { api_key: token, distinct_id: 'u5', person_properties: { plan: 'pro' } }),
  );
  expect(res.status).toBe(200);
  expect(res.body.errorsWhileComputingFlags).toBe(true);
  expect(Object.keys(res.body.flags)).toEqual(['property-cohort']);
  expect(res.body.flags['property-cohort'].enabled).toBe(true);
  expect(ms).toBeLessThan(ANSWERED_WITHIN_MS);
});
