// Test harness: a fresh database per test file, Redis under a unique key prefix, the real
// management app on an ephemeral port, and fixtures (two organizations, users, keys) built
// through Prisma. Requests go over real HTTP with fetch.
import { randomBytes } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { createRedis, type Redis } from '@sett/cache';
import { createPgPool, createPrisma, type PrismaClient } from '@sett/db';
import { createMetricsRegistry, startService, type RunningService } from '@sett/http';
import {
  generateKeyId,
  generatePersonalApiKey,
  generateProjectToken,
  hashPassword,
  hashPersonalApiKey,
  maskKey,
} from '@sett/keys';
import { createSilentLogger } from '@sett/logger';
import { createTestDatabase, uniqueName, type TestDatabase } from '@sett/testing';
import type pg from 'pg';
import { createManagementApp, type ManagementConfig, type ManagementDeps } from '../src/app';

export interface Harness {
  url: string;
  db: TestDatabase;
  prisma: PrismaClient;
  pool: pg.Pool;
  redis: Redis;
  service: RunningService;
  /** The app's SETT_ENCRYPTION_KEY: random per harness, never a file. */
  encryptionKey: Buffer;
  stop(): Promise<void>;
}

export async function startHarness(config: Partial<ManagementConfig> = {}): Promise<Harness> {
  const db = await createTestDatabase();
  const prisma = createPrisma({ databaseUrl: db.url, maxConnections: 5 });
  const pool = createPgPool({ databaseUrl: db.url, max: 3 });
  const redis = createRedis({
    url: process.env.REDIS_URL || 'redis://127.0.0.1:6379',
    keyPrefix: `${uniqueName('mgmt')}:`,
  });
  const encryptionKey = randomBytes(32);
  const { url, service } = await serveManagement({ prisma, pool, redis, encryptionKey, config });
  return {
    url,
    db,
    prisma,
    pool,
    redis,
    service,
    encryptionKey,
    async stop() {
      await service.stop();
      await prisma.$disconnect();
      await pool.end();
      redis.disconnect();
      await db.drop();
    },
  };
}

/**
 * The real management app on an ephemeral port over the given connections. Only the
 * connections are required: a silent logger, a fresh registry, a random encryption key and a
 * rate limit no test reaches are filled in. A short drain: a test must not wait out the
 * production shutdown timeout on a lingering socket.
 */
export async function serveManagement(
  deps: Pick<ManagementDeps, 'prisma' | 'pool' | 'redis'> &
    Partial<Omit<ManagementDeps, 'config'>> & { config?: Partial<ManagementConfig> },
): Promise<{ url: string; service: RunningService; stop(): Promise<void> }> {
  const logger = deps.logger ?? createSilentLogger();
  const app = createManagementApp({
    registry: createMetricsRegistry('management'),
    encryptionKey: randomBytes(32),
    ...deps,
    logger,
    // Every answer of every test is checked against its route's response schema.
    config: { rateLimitPerMinute: 100_000, checkResponses: true, ...deps.config },
  });
  const service = await startService({
    name: 'management',
    app,
    host: '127.0.0.1',
    port: 0,
    logger,
    shutdownTimeoutMs: 2000,
  });
  return {
    url: `http://127.0.0.1:${(service.server.address() as AddressInfo).port}`,
    service,
    stop: () => service.stop(),
  };
}

export interface Fixture {
  orgA: { id: string };
  orgB: { id: string };
  teamA: { id: number; apiToken: string };
  teamA2: { id: number };
  teamB: { id: number };
  alice: { id: number; uuid: string }; // member of A (level 1), has a password
  adminA: { id: number; uuid: string }; // admin (8) of A
  bob: { id: number; uuid: string }; // member of B only
  staff: { id: number; uuid: string }; // staff, member of B only
}

let counter = 0;

export async function seed(prisma: PrismaClient): Promise<Fixture> {
  const n = ++counter;
  const orgA = await prisma.organization.create({ data: { name: 'Org A', slug: `org-a-${n}` } });
  const orgB = await prisma.organization.create({ data: { name: 'Org B', slug: `org-b-${n}` } });
  const teamA = await prisma.team.create({
    data: { organizationId: orgA.id, name: 'A project', apiToken: generateProjectToken() },
  });
  const teamA2 = await prisma.team.create({
    data: { organizationId: orgA.id, name: 'A second project', apiToken: generateProjectToken() },
  });
  const teamB = await prisma.team.create({
    data: { organizationId: orgB.id, name: 'B project', apiToken: generateProjectToken() },
  });
  const user = async (email: string, orgId: string, teamId: number, level: number, extra: object = {}) => {
    const u = await prisma.user.create({
      data: {
        email,
        distinctId: generateKeyId(),
        firstName: email.split('@')[0]!,
        currentOrganizationId: orgId,
        currentTeamId: teamId,
        ...extra,
      },
    });
    await prisma.organizationMembership.create({ data: { organizationId: orgId, userId: u.id, level } });
    return u;
  };
  const alice = await user(`alice${n}@a.test`, orgA.id, teamA.id, 1, {
    password: await hashPassword('correct horse'),
  });
  const adminA = await user(`admin${n}@a.test`, orgA.id, teamA.id, 8);
  const bob = await user(`bob${n}@b.test`, orgB.id, teamB.id, 1);
  const staff = await user(`staff${n}@b.test`, orgB.id, teamB.id, 15, { isStaff: true });
  return { orgA, orgB, teamA, teamA2, teamB, alice, adminA, bob, staff };
}

/** A personal API key of the user; `limits`: the projects and organizations it is limited to. */
export async function createKey(
  prisma: PrismaClient,
  userId: number,
  scopes: string[],
  limits: { teams?: number[]; organizations?: string[] } = {},
): Promise<string> {
  const value = generatePersonalApiKey();
  await prisma.personalApiKey.create({
    data: {
      id: generateKeyId(),
      userId,
      label: 'test',
      secureValue: hashPersonalApiKey(value),
      maskValue: maskKey(value),
      scopes,
      scopedTeams: limits.teams ?? [],
      scopedOrganizations: limits.organizations ?? [],
    },
  });
  return value;
}

// Response bodies are loosely typed on purpose: tests assert on their shape.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export interface Reply<T = any> {
  status: number;
  body: T;
  headers: Headers;
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function call<T = any>(
  h: { url: string },
  method: string,
  path: string,
  key?: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<Reply<T>> {
  const res = await fetch(`${h.url}${path}`, {
    method,
    headers: {
      ...(key ? { authorization: `Bearer ${key}` } : {}),
      ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
      ...headers,
    },
    body: body === undefined ? undefined : JSON.stringify(body),
    // A request that never answers fails here, naming itself, instead of as a test timeout.
    signal: AbortSignal.timeout(20_000),
  });
  const text = await res.text();
  return {
    status: res.status,
    body: text ? (JSON.parse(text) as T) : (undefined as T),
    headers: res.headers,
  };
}
