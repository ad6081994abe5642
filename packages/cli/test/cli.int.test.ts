// The `sett` CLI against a real database and Redis, run as the user runs it (a child process),
// so "only JSON on stdout" and the exit codes are what is tested.
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { createPrisma, type PrismaClient } from '@sett/db';
import { createRedis, decodeProjectRef, redisKeys, type Redis } from '@sett/cache';
import { hashPersonalApiKey } from '@sett/keys';
import { createTestDatabase, type TestDatabase } from '@sett/testing';

const run = promisify(execFile);
const main = path.join(__dirname, '../src/main.ts');

describe('sett CLI', () => {
  let db: TestDatabase;
  let prisma: PrismaClient;
  let redis: Redis;
  let env: NodeJS.ProcessEnv;

  beforeAll(async () => {
    db = await createTestDatabase();
    prisma = createPrisma({ databaseUrl: db.url });
    redis = createRedis({ url: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', name: 'cli-test' });
    env = { ...process.env, DATABASE_URL: db.url, LOG_LEVEL: 'error' };
  });

  afterAll(async () => {
    await prisma.$disconnect();
    redis.disconnect();
    await db.drop();
  });

  const sett = (...args: string[]) => run(process.execPath, ['--import', 'tsx', main, ...args], { env });

  it('bootstrap prints only JSON and is idempotent: same organization, project and user', async () => {
    const first = await sett(
      'bootstrap',
      '--email',
      'Ops@Example.com',
      '--org',
      'Acme',
      '--project',
      'Web',
      '--json',
    );
    const a = JSON.parse(first.stdout) as Record<string, unknown>;
    expect(first.stdout.trim().split('\n')).toHaveLength(1);
    expect(Object.keys(a).sort()).toEqual(
      ['organization_id', 'personal_api_key', 'project_api_key', 'project_id', 'user_uuid'].sort(),
    );
    expect(a.project_api_key).toMatch(/^phc_/);
    expect(a.personal_api_key).toMatch(/^phx_/);

    const second = JSON.parse(
      (await sett('bootstrap', '--email', 'ops@example.com', '--org', 'Acme', '--project', 'Web', '--json'))
        .stdout,
    );
    expect(second.organization_id).toBe(a.organization_id);
    expect(second.project_id).toBe(a.project_id);
    expect(second.project_api_key).toBe(a.project_api_key);
    expect(second.user_uuid).toBe(a.user_uuid);
    // A fresh key each time: stored keys cannot be shown again.
    expect(second.personal_api_key).not.toBe(a.personal_api_key);

    expect(await prisma.organization.count()).toBe(1);
    expect(await prisma.team.count()).toBe(1);
    expect(await prisma.user.count()).toBe(1);

    // Keys are stored only as hashes, with every scope.
    const stored = await prisma.personalApiKey.findMany();
    expect(stored).toHaveLength(2);
    for (const k of stored) {
      expect(k.scopes).toEqual(['*']);
      expect(JSON.stringify(k)).not.toContain(a.personal_api_key as string);
    }
    expect(stored.map((k) => k.secureValue)).toContain(hashPersonalApiKey(a.personal_api_key as string));

    // The project token is published for capture and decide.
    const ref = decodeProjectRef(await redis.get(redisKeys.token(a.project_api_key as string)));
    expect(ref).toEqual({ teamId: a.project_id, organizationId: a.organization_id });

    const user = await prisma.user.findUniqueOrThrow({ where: { uuid: a.user_uuid as string } });
    expect(user.isStaff).toBe(true);
    expect(user.email).toBe('ops@example.com');
  });

  it('keys create prints the key once and stores its hash with the scopes', async () => {
    const user = await prisma.user.findFirstOrThrow();
    const out = await sett(
      'keys',
      'create',
      '--user',
      user.uuid,
      '--scopes',
      'user:read,early_access_feature:write',
      '--json',
    );
    const r = JSON.parse(out.stdout) as { personal_api_key: string; scopes: string[] };
    expect(r.scopes).toEqual(['user:read', 'early_access_feature:write']);
    const row = await prisma.personalApiKey.findUniqueOrThrow({
      where: { secureValue: hashPersonalApiKey(r.personal_api_key) },
    });
    expect(row.scopes).toEqual(['user:read', 'early_access_feature:write']);
    expect(row.userId).toBe(user.id);
  });

  it('rejects unknown scopes and unknown users with a clear message and exit code 2', async () => {
    const user = await prisma.user.findFirstOrThrow();
    await expect(
      sett('keys', 'create', '--user', user.uuid, '--scopes', 'user:admin', '--json'),
    ).rejects.toMatchObject({
      code: 2,
      stdout: '',
      stderr: expect.stringContaining('unknown scope(s): user:admin'),
    });
    await expect(
      sett('keys', 'create', '--user', '00000000-0000-4000-8000-000000000000', '--scopes', 'user:read'),
    ).rejects.toMatchObject({ code: 2, stderr: expect.stringContaining('no user with uuid') });
  });
});
