// The `sett` CLI against a real database and Redis, run as the user runs it (a child process),
// so "only JSON on stdout" and the exit codes are what is tested.
import { execFile, spawn } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { createPrisma, type PrismaClient } from '@sett/db';
import { createRedis, decodeProjectRef, redisKeys, type Redis } from '@sett/cache';
import { checkPassword, hashPersonalApiKey } from '@sett/keys';
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

  it('a second bootstrap with a new e-mail and the same --org name gets a new organization and no staff', async () => {
    const first = await prisma.user.findFirstOrThrow({ orderBy: { id: 'asc' } });
    const r = JSON.parse(
      (await sett('bootstrap', '--email', 'intruder@example.com', '--org', 'Acme', '--json')).stdout,
    ) as Record<string, string>;
    expect(r.organization_id).not.toBe(first.currentOrganizationId);
    const intruder = await prisma.user.findUniqueOrThrow({
      where: { uuid: r.user_uuid },
      include: { memberships: true },
    });
    expect(intruder.isStaff).toBe(false);
    expect(intruder.memberships.map((m) => m.organizationId)).toEqual([r.organization_id]);
    expect(
      await prisma.organizationMembership.count({ where: { organizationId: first.currentOrganizationId! } }),
    ).toBe(1);
  });

  it('orgs create makes a new organization and an ordinary owner; orgs list shows it; never joined by name', async () => {
    const out = JSON.parse(
      (await sett('orgs', 'create', '--name', 'Acme', '--owner-email', 'Owner@Beta.test', '--json')).stdout,
    ) as Record<string, string | null>;
    expect(out.project_api_key).toMatch(/^phc_/);
    expect(out.personal_api_key).toMatch(/^phx_/);
    const owner = await prisma.user.findUniqueOrThrow({
      where: { uuid: out.owner_uuid! },
      include: { memberships: true },
    });
    expect(owner.isStaff).toBe(false);
    expect(owner.email).toBe('owner@beta.test');
    expect(owner.memberships).toEqual([
      expect.objectContaining({ organizationId: out.organization_id, level: 15 }),
    ]);
    // A second organization for an existing owner: no new key for them.
    const again = JSON.parse(
      (await sett('orgs', 'create', '--name', 'Acme', '--owner-email', 'owner@beta.test', '--json')).stdout,
    ) as Record<string, string | null>;
    expect(again.organization_id).not.toBe(out.organization_id);
    expect(again.personal_api_key).toBeNull();
    const list = JSON.parse((await sett('orgs', 'list', '--json')).stdout) as {
      id: string;
      members: number;
    }[];
    expect(list.map((o) => o.id)).toEqual(
      expect.arrayContaining([out.organization_id, again.organization_id]),
    );
    expect(list.find((o) => o.id === out.organization_id)?.members).toBe(1);
    const ref = decodeProjectRef(await redis.get(redisKeys.token(out.project_api_key!)));
    expect(ref).toMatchObject({ organizationId: out.organization_id });
  });

  /** The CLI with `input` on its stdin (a pipe, as from a secret store): exit code and output. */
  const settWithStdin = (input: string, ...args: string[]) =>
    new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
      const child = spawn(process.execPath, ['--import', 'tsx', main, ...args], { env });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
      child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
      child.on('close', (code) => resolve({ code, stdout, stderr }));
      child.stdin.end(input);
    });

  it('creates a project in an organization, and a key limited to it', async () => {
    const org = (
      JSON.parse((await sett('orgs', 'list', '--json')).stdout) as { id: string; slug: string }[]
    )[0]!;
    const project = JSON.parse(
      (
        await sett(
          'projects',
          'create',
          '--name',
          'Mobile',
          '--org',
          org.slug,
          '--timezone',
          'Europe/Berlin',
          '--json',
        )
      ).stdout,
    ) as { project_id: number; project_api_key: string; timezone: string };
    expect(project).toMatchObject({
      timezone: 'Europe/Berlin',
      project_api_key: expect.stringMatching(/^phc_/),
    });
    const team = await prisma.team.findUniqueOrThrow({ where: { id: project.project_id } });
    expect(team).toMatchObject({ name: 'Mobile', organizationId: org.id, timezone: 'Europe/Berlin' });
    // Capture and decide find the new project's token in Redis.
    const ref = decodeProjectRef(await redis.get(redisKeys.token(project.project_api_key)));
    expect(ref).toMatchObject({ teamId: project.project_id });
    await expect(
      sett('projects', 'create', '--name', 'X', '--org', org.slug, '--timezone', 'Mars/Base'),
    ).rejects.toThrow(/IANA time zone/);

    const owner = await prisma.organizationMembership.findFirstOrThrow({
      where: { organizationId: org.id },
      include: { user: true },
    });
    const key = JSON.parse(
      (
        await sett(
          'keys',
          'create',
          '--user',
          owner.user.uuid,
          '--scopes',
          'feature_flag:read',
          '--project',
          String(project.project_id),
          '--json',
        )
      ).stdout,
    ) as { personal_api_key: string; scoped_teams: string };
    expect(key.scoped_teams).toBe(String(project.project_id));
    const row = await prisma.personalApiKey.findUniqueOrThrow({
      where: { secureValue: hashPersonalApiKey(key.personal_api_key) },
    });
    expect(row.scopedTeams).toEqual([project.project_id]);
    await expect(
      sett(
        'keys',
        'create',
        '--user',
        owner.user.uuid,
        '--scopes',
        'feature_flag:read',
        '--project',
        '999999',
      ),
    ).rejects.toThrow(/no project 999999/);
  });

  it('sets a password from stdin, never from an argument, and ends the sessions', async () => {
    const org = (
      JSON.parse((await sett('orgs', 'list', '--json')).stdout) as { id: string; slug: string }[]
    )[0]!;
    const created = await settWithStdin(
      'first password\n',
      'users',
      'create',
      '--email',
      'console@beta.test',
      '--org',
      org.slug,
      '--with-password',
      '--json',
    );
    expect(created.code).toBe(0);
    const user = await prisma.user.findFirstOrThrow({ where: { email: 'console@beta.test' } });
    expect((await checkPassword('first password', user.password)).valid).toBe(true);
    await prisma.userSession.create({
      data: {
        id: 'x'.repeat(64),
        userId: user.id,
        csrfToken: 'c',
        verified: true,
        expiresAt: new Date(Date.now() + 60_000),
      },
    });

    const changed = await settWithStdin(
      'second password\n',
      'users',
      'set-password',
      '--email',
      'CONSOLE@beta.test',
      '--json',
    );
    expect(changed.code).toBe(0);
    expect(JSON.parse(changed.stdout)).toMatchObject({
      user_uuid: user.uuid,
      password_set: true,
      sessions_ended: 1,
    });
    const after = await prisma.user.findUniqueOrThrow({ where: { id: user.id } });
    expect((await checkPassword('second password', after.password)).valid).toBe(true);
    expect((await checkPassword('first password', after.password)).valid).toBe(false);

    const short = await settWithStdin('short\n', 'users', 'set-password', '--email', 'console@beta.test');
    expect(short.code).not.toBe(0);
    expect(short.stderr).toMatch(/8 to 128 characters/);
    const asArgument = await settWithStdin(
      '',
      'users',
      'set-password',
      '--email',
      'console@beta.test',
      '--password',
      'x',
    );
    expect(asArgument.code).toBe(2);
    const unknown = await settWithStdin(
      'a fine password\n',
      'users',
      'set-password',
      '--email',
      'nobody@beta.test',
    );
    expect(unknown.code).not.toBe(0);
    expect(unknown.stderr).toMatch(/no user with e-mail/);
  });

  it('users create adds an ordinary user at a level and prints a working key once; set-staff grants and revokes', async () => {
    const org = (
      JSON.parse((await sett('orgs', 'list', '--json')).stdout) as { id: string; slug: string }[]
    )[0]!;
    const out = JSON.parse(
      (
        await sett(
          'users',
          'create',
          '--email',
          'new@beta.test',
          '--org',
          org.slug,
          '--level',
          'admin',
          '--json',
        )
      ).stdout,
    ) as { user_uuid: string; personal_api_key: string; level: number };
    expect(out.level).toBe(8);
    const row = await prisma.personalApiKey.findUniqueOrThrow({
      where: { secureValue: hashPersonalApiKey(out.personal_api_key) },
      include: { user: { include: { memberships: true } } },
    });
    expect(row.user.uuid).toBe(out.user_uuid);
    expect(row.user.isStaff).toBe(false);
    expect(row.user.memberships).toEqual([expect.objectContaining({ organizationId: org.id, level: 8 })]);

    const on = JSON.parse(
      (await sett('users', 'set-staff', '--email', 'NEW@beta.test', '--on', '--json')).stdout,
    );
    expect(on).toMatchObject({ user_uuid: out.user_uuid, is_staff: true });
    const off = JSON.parse(
      (await sett('users', 'set-staff', '--email', 'new@beta.test', '--off', '--json')).stdout,
    );
    expect(off.is_staff).toBe(false);
    expect((await prisma.user.findUniqueOrThrow({ where: { uuid: out.user_uuid } })).isStaff).toBe(false);

    for (const args of [
      ['users', 'create', '--email', 'new@beta.test', '--org', org.slug],
      ['users', 'create', '--email', 'x@beta.test', '--org', 'no-such-org'],
      ['users', 'create', '--email', 'x@beta.test', '--org', org.slug, '--level', 'god'],
      ['users', 'set-staff', '--email', 'new@beta.test'],
      ['users', 'set-staff', '--email', 'nobody@beta.test', '--on'],
      ['orgs', 'create', '--name', 'X', '--owner-email', 'not-an-email'],
    ])
      await expect(sett(...args)).rejects.toMatchObject({ code: 2, stdout: '' });
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

  it('users list, keys list and projects list show what bootstrap and the other commands created, as a table or JSON', async () => {
    const users = JSON.parse((await sett('users', 'list', '--json')).stdout) as {
      uuid: string;
      email: string;
      is_staff: boolean;
      organizations: { id: string; slug: string; level: number }[];
      personal_api_keys: number;
    }[];
    const ops = users.find((u) => u.email === 'ops@example.com')!;
    expect(ops).toMatchObject({ is_staff: true });
    expect(ops.organizations.length).toBeGreaterThanOrEqual(1);
    expect(ops.personal_api_keys).toBeGreaterThanOrEqual(1);
    const dbUsers = await prisma.user.findMany();
    expect(users.map((u) => u.uuid).sort()).toEqual(dbUsers.map((u) => u.uuid).sort());

    const keys = JSON.parse((await sett('keys', 'list', '--json')).stdout) as {
      id: string;
      user_uuid: string;
      user_email: string;
      label: string;
      mask_value: string;
      scopes: string[];
      created_at: string;
      last_used_at: string | null;
    }[];
    expect(keys.length).toBe(await prisma.personalApiKey.count());
    expect(keys.find((k) => k.user_uuid === ops.uuid)).toMatchObject({ user_email: 'ops@example.com' });
    // Never the key or its hash: only the mask.
    for (const k of keys) {
      expect(k.mask_value).toMatch(/^phx_/);
      expect(JSON.stringify(k)).not.toMatch(/sha256|phx_[A-Za-z0-9]{20,}/);
    }
    const own = JSON.parse((await sett('keys', 'list', '--user', ops.uuid, '--json')).stdout) as {
      user_uuid: string;
    }[];
    expect(own.length).toBeGreaterThanOrEqual(1);
    expect(own.every((k) => k.user_uuid === ops.uuid)).toBe(true);

    const projects = JSON.parse((await sett('projects', 'list', '--json')).stdout) as {
      id: number;
      name: string;
      api_token: string;
      organization_id: string;
      organization_slug: string;
      ingested_event: boolean;
    }[];
    const teams = await prisma.team.findMany({ where: { deletedAt: null } });
    expect(projects.map((p) => p.id).sort()).toEqual(teams.map((t) => t.id).sort());
    expect(projects[0]).toMatchObject({ api_token: expect.stringMatching(/^phc_/), ingested_event: false });
    const org = projects[0]!.organization_slug;
    const inOrg = JSON.parse((await sett('projects', 'list', '--org', org, '--json')).stdout) as {
      organization_slug: string;
    }[];
    expect(inOrg.length).toBeGreaterThanOrEqual(1);
    expect(inOrg.every((p) => p.organization_slug === org)).toBe(true);

    // Tables: a header line, then one line per row, naming what an operator looks for.
    const usersTable = (await sett('users', 'list')).stdout.trim().split('\n');
    expect(usersTable[0]).toMatch(/^UUID\s+EMAIL/);
    expect(usersTable).toHaveLength(users.length + 1);
    expect(usersTable.join('\n')).toContain(ops.uuid);
    const keysTable = (await sett('keys', 'list')).stdout.trim().split('\n');
    expect(keysTable[0]).toMatch(/^ID\s+USER/);
    expect(keysTable).toHaveLength(keys.length + 1);
    const projectsTable = (await sett('projects', 'list')).stdout.trim().split('\n');
    expect(projectsTable[0]).toMatch(/^ID\s+ORGANIZATION/);
    expect(projectsTable.join('\n')).toContain(projects[0]!.api_token);
  });

  it('an unknown option or command prints the usage and exits 2, without a stack trace', async () => {
    for (const args of [['users', 'list', '--bogus'], ['projects', 'list', '-x'], ['nothing-like-this']]) {
      const error = (await sett(...args).catch((e: unknown) => e)) as {
        code: number;
        stdout: string;
        stderr: string;
      };
      expect(error.code).toBe(2);
      expect(error.stdout).toBe('');
      expect(error.stderr).toContain('usage:');
      expect(error.stderr).toContain('sett projects list');
      expect(error.stderr).not.toMatch(/\n\s+at /);
    }
  });

  it('projects set turns anonymize_ips and GeoIP on and off; projects list shows them', async () => {
    const team = await prisma.team.findFirstOrThrow({ where: { deletedAt: null } });
    const out = JSON.parse(
      (
        await sett(
          'projects',
          'set',
          '--id',
          String(team.id),
          '--anonymize-ips',
          'on',
          '--geoip',
          'off',
          '--json',
        )
      ).stdout,
    ) as Record<string, unknown>;
    expect(out).toMatchObject({ id: team.id, anonymize_ips: true, geoip_enabled: false });
    expect(await prisma.team.findUniqueOrThrow({ where: { id: team.id } })).toMatchObject({
      anonymizeIps: true,
      geoipEnabled: false,
    });
    const listed = (
      JSON.parse((await sett('projects', 'list', '--json')).stdout) as Record<string, unknown>[]
    ).find((p) => p.id === team.id);
    expect(listed).toMatchObject({ anonymize_ips: true, geoip_enabled: false });
    await sett('projects', 'set', '--id', String(team.id), '--anonymize-ips', 'off', '--geoip', 'on');
    expect(await prisma.team.findUniqueOrThrow({ where: { id: team.id } })).toMatchObject({
      anonymizeIps: false,
      geoipEnabled: true,
    });
    for (const args of [
      ['projects', 'set', '--id', String(team.id), '--anonymize-ips', 'maybe'],
      ['projects', 'set', '--id', String(team.id)],
      ['projects', 'set', '--id', '999999', '--geoip', 'on'],
      ['projects', 'set', '--anonymize-ips', 'on'],
    ])
      await expect(sett(...args)).rejects.toMatchObject({ code: 2, stdout: '' });
  });
});
