// Token rotation and project deletion reach capture and decide, across replicas: two capture
// apps and two decide apps (each with its own in-process token cache, a 10-minute TTL so only the
// pub/sub message can make them forget) share management's Redis and Postgres; capture produces
// to a private development broker. After POST reset_token/ the old token is refused by every
// replica and the new one accepted; after DELETE the project's token is refused everywhere.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createRedis, createTokenResolver, type Redis } from '@sett/cache';
import { loadConfig } from '@sett/config';
import { createPgPool } from '@sett/db';
import { startDevBroker, type DevBroker } from '@sett/devstack';
import { type RouteApp, createMetricsRegistry } from '@sett/http';
import { createKafkajsProducer, createKafka, TOPICS, type BatchingProducer } from '@sett/kafka';
import { createSilentLogger } from '@sett/logger';
import type pg from 'pg';
import { createCaptureApp } from '../../capture/src/app';
import { createProjectLoader } from '../../capture/src/capture/project-store';
import { createDecideApp, type DecideApp } from '../../decide/src/app';
import { waitFor } from '@sett/testing';
import { call, createKey, seed, startHarness, type Fixture, type Harness } from './helpers';

const LONG_TTL_MS = 600_000;

let h: Harness;
let f: Fixture;
let broker: DevBroker;
let producer: BatchingProducer;
let pool: pg.Pool;
let adminKey: string;
const servers: http.Server[] = [];
const connections: Redis[] = [];
const closers: Array<() => Promise<void> | void> = [];
const captureUrls: string[] = [];
const decideUrls: string[] = [];

async function listen(app: http.RequestListener | RouteApp): Promise<string> {
  if ('listener' in app) await app.ready();
  const server = http.createServer('listener' in app ? app.listener : app);
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** A Redis client with management's key prefix (pub/sub channels are not prefixed). */
function redisLikeManagement(): Redis {
  const r = createRedis({
    url: process.env.REDIS_URL || 'redis://127.0.0.1:6379',
    keyPrefix: h.redis.options.keyPrefix,
  });
  connections.push(r);
  return r;
}

async function startCapture(): Promise<string> {
  const config = loadConfig({ LOG_LEVEL: 'error' });
  const redis = redisLikeManagement();
  const subscriber = redisLikeManagement();
  const tokenResolver = createTokenResolver({
    redis,
    subscriber,
    loadFromDb: createProjectLoader(pool),
    ttlMs: LONG_TTL_MS,
    negativeTtlMs: LONG_TTL_MS,
  });
  await tokenResolver.subscribed;
  closers.push(() => tokenResolver.close());
  const app = createCaptureApp({
    config,
    logger: createSilentLogger(),
    redis,
    tokenResolver,
    producer,
    registry: createMetricsRegistry('capture'),
  });
  return listen(app);
}

async function startDecide(): Promise<string> {
  const decide: DecideApp = createDecideApp({
    redis: redisLikeManagement(),
    subscriber: redisLikeManagement(),
    pool,
    logger: createSilentLogger(),
    registry: createMetricsRegistry('decide'),
    config: { flagCacheTtlMs: 0, personCacheTtlMs: 0, tokenCacheTtlMs: LONG_TTL_MS, maxBodyBytes: 1 << 20 },
  });
  await decide.subscribed;
  closers.push(() => decide.close());
  return listen(decide.app);
}

async function post(url: string, body: unknown): Promise<number> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(20_000),
  });
  await res.arrayBuffer();
  return res.status;
}

/** Status of every replica for this token: capture's /i/v0/e/ and decide's /flags. */
async function statuses(token: string): Promise<number[]> {
  return Promise.all([
    ...captureUrls.map((u) => post(`${u}/i/v0/e/`, { api_key: token, event: 'e', distinct_id: 'd1' })),
    ...decideUrls.map((u) => post(`${u}/flags/?v=2`, { api_key: token, distinct_id: 'd1' })),
  ]);
}

/** Polls until every replica answers `status` for the token (the signal), or fails after 10 s. */
async function untilAll(token: string, status: number): Promise<void> {
  let last: number[] = [];
  await waitFor(
    `every replica to answer ${status} for ${token.slice(0, 8)}…`,
    async () => (last = await statuses(token)).every((s) => s === status),
    { intervalMs: 0 },
  ).catch((err: Error) => {
    throw new Error(`${err.message} (they answer ${last.join(', ')})`);
  });
}

beforeAll(async () => {
  h = await startHarness();
  f = await seed(h.prisma);
  adminKey = await createKey(h.prisma, f.adminA.id, ['*']);
  pool = createPgPool({ databaseUrl: h.db.url, max: 3 });
  broker = await startDevBroker({ partitions: 1 });
  const kafka = createKafka({ brokers: broker.brokers, clientId: 'rotation-test', logLevel: 'error' });
  producer = createKafkajsProducer({
    kafka,
    lingerMs: 1,
    sendTimeoutMs: 10_000,
    maxMessageBytes: 1_000_000,
    readiness: { probeTopics: [TOPICS.main] },
  });
  await producer.connect();
  captureUrls.push(await startCapture(), await startCapture());
  decideUrls.push(await startDecide(), await startDecide());
}, 60_000);

afterAll(async () => {
  for (const s of servers) await new Promise((r) => s.close(r));
  for (const c of closers) await c();
  for (const r of connections) r.disconnect();
  await producer?.disconnect();
  await broker?.stop();
  await pool?.end();
  await h.stop();
});

test('reset_token: the old token stops working on every capture and decide replica, the new one works', async () => {
  const old = f.teamA.apiToken;
  // Warm every replica's cache with the old token.
  expect(await statuses(old)).toEqual([200, 200, 200, 200]);

  const reset = await call(h, 'POST', `/api/projects/${f.teamA.id}/reset_token/`, adminKey);
  expect(reset.status).toBe(200);
  const fresh = reset.body.api_token as string;
  expect(fresh).toMatch(/^phc_/);
  expect(fresh).not.toBe(old);

  await untilAll(old, 401);
  expect(await statuses(fresh)).toEqual([200, 200, 200, 200]);
  // And through management: the project shows the new token.
  expect((await call(h, 'GET', `/api/projects/${f.teamA.id}/`, adminKey)).body.api_token).toBe(fresh);
});

test('DELETE of a project: its token is refused everywhere and the project is gone from every API', async () => {
  const token = (await h.prisma.team.findUniqueOrThrow({ where: { id: f.teamA2.id } })).apiToken;
  expect(await statuses(token)).toEqual([200, 200, 200, 200]);

  expect((await call(h, 'DELETE', `/api/projects/${f.teamA2.id}/`, adminKey)).status).toBe(204);
  await untilAll(token, 401);

  const row = await h.prisma.team.findUniqueOrThrow({ where: { id: f.teamA2.id } });
  expect(row.deletedAt).not.toBeNull();
  for (const path of [
    `/api/projects/${f.teamA2.id}/`,
    `/api/projects/${f.teamA2.id}/feature_flags/`,
    `/api/projects/${f.teamA2.id}/early_access_feature/`,
    `/api/projects/${f.teamA2.id}/cohorts/`,
    `/api/projects/${f.teamA2.id}/events/`,
    `/api/projects/${f.teamA2.id}/persons/`,
  ])
    expect([path, (await call(h, 'GET', path, adminKey)).status]).toEqual([path, 404]);
  const list = await call(h, 'GET', '/api/projects/', adminKey);
  expect(list.body.results.map((p: { id: number }) => p.id)).not.toContain(f.teamA2.id);
  // A second DELETE: already gone.
  expect((await call(h, 'DELETE', `/api/projects/${f.teamA2.id}/`, adminKey)).status).toBe(404);
});
