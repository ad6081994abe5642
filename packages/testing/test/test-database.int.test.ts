// createTestDatabase hands each test file its own migrated database; the Prisma client from
// @sett/db works against it; ingestion's idempotent insert on the events key holds.
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { createPgPool, createPrisma, type PrismaClient } from '@sett/db';
import { createTestDatabase, uniqueName, type TestDatabase } from '../src';

describe('createTestDatabase', () => {
  let a: TestDatabase;
  let b: TestDatabase;

  beforeAll(async () => {
    [a, b] = await Promise.all([createTestDatabase(), createTestDatabase()]);
  });

  afterAll(async () => {
    await Promise.all([a?.drop(), b?.drop()]);
  });

  test('gives distinct, migrated databases that do not share rows', async () => {
    expect(a.name).not.toBe(b.name);
    expect(a.url).toContain(a.name);
    const ca = new pg.Client({ connectionString: a.url });
    const cb = new pg.Client({ connectionString: b.url });
    await Promise.all([ca.connect(), cb.connect()]);
    try {
      const migrations = await ca.query(
        'SELECT count(*)::int AS n FROM _prisma_migrations WHERE finished_at IS NOT NULL',
      );
      expect(migrations.rows[0].n).toBeGreaterThan(0);
      await ca.query(
        `INSERT INTO organizations (id, name, slug, updated_at) VALUES ($1, 'A', 'only-in-a', now())`,
        [randomUUID()],
      );
      const inB = await cb.query(`SELECT 1 FROM organizations WHERE slug = 'only-in-a'`);
      expect(inB.rowCount).toBe(0);
    } finally {
      await Promise.all([ca.end(), cb.end()]);
    }
  });

  test('drop removes the database even with open connections', async () => {
    const db = await createTestDatabase();
    const c = new pg.Client({ connectionString: db.url });
    await c.connect();
    c.on('error', () => undefined); // FORCE terminates this connection
    await db.drop();
    const admin = new pg.Client({ connectionString: a.url });
    await admin.connect();
    try {
      const left = await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [db.name]);
      expect(left.rowCount).toBe(0);
    } finally {
      await admin.end();
      await c.end().catch(() => undefined);
    }
  });

  test('uniqueName is unique and keeps the prefix', () => {
    const names = new Set(Array.from({ length: 100 }, () => uniqueName('topic')));
    expect(names.size).toBe(100);
    for (const n of names) expect(n.startsWith('topic_')).toBe(true);
  });
});

describe('on a test database', () => {
  let db: TestDatabase;
  let prisma: PrismaClient;
  let pool: pg.Pool;

  beforeAll(async () => {
    db = await createTestDatabase();
    prisma = createPrisma({ databaseUrl: db.url, maxConnections: 2 });
    pool = createPgPool({ databaseUrl: db.url, max: 2, applicationName: 'sett-test' });
  });

  afterAll(async () => {
    await prisma?.$disconnect();
    await pool?.end();
    await db?.drop();
  });

  test('the Prisma client inserts and reads an organization, team and user', async () => {
    const org = await prisma.organization.create({ data: { name: 'Acme', slug: uniqueName('acme') } });
    const team = await prisma.team.create({
      data: { organizationId: org.id, name: 'Web', apiToken: uniqueName('phc') },
    });
    const user = await prisma.user.create({
      data: {
        email: `${uniqueName('u')}@example.com`,
        distinctId: uniqueName('d'),
        currentOrganizationId: org.id,
        currentTeamId: team.id,
        memberships: { create: { organizationId: org.id, level: 15 } },
      },
    });

    const read = await prisma.user.findUniqueOrThrow({
      where: { uuid: user.uuid },
      include: { currentTeam: true, currentOrganization: true, memberships: true },
    });
    expect(read.currentOrganization?.slug).toBe(org.slug);
    expect(read.currentTeam?.apiToken).toBe(team.apiToken);
    expect(read.currentTeam?.projectId).toBe(BigInt(team.id));
    expect(read.memberships).toHaveLength(1);
    expect(read.memberships[0]?.level).toBe(15);
    // Defaults come from the database, as PostHog's API exposes them.
    expect(read.eventsColumnConfig).toEqual({ active: 'DEFAULT' });
    expect(read.firstName).toBe('');
    expect(org.availableProductFeatures).toEqual([]);
    expect(org.pluginsAccessLevel).toBe(9);
    expect(team.timezone).toBe('UTC');
  });

  test('INSERT ... ON CONFLICT DO NOTHING on the events key is idempotent', async () => {
    const insert = `INSERT INTO events (uuid, team_id, event, distinct_id, properties, timestamp)
                    VALUES ($1, $2, '$pageview', 'user-1', '{}', now()) ON CONFLICT DO NOTHING`;
    const uuid = randomUUID();
    expect((await pool.query(insert, [uuid, 1])).rowCount).toBe(1);
    expect((await pool.query(insert, [uuid, 1])).rowCount).toBe(0);
    // The key is per project: the same uuid in another project is a different event.
    expect((await pool.query(insert, [uuid, 2])).rowCount).toBe(1);
    const count = await pool.query(
      'SELECT team_id, count(*)::int AS n FROM events WHERE uuid = $1 GROUP BY team_id ORDER BY team_id',
      [uuid],
    );
    expect(count.rows).toEqual([
      { team_id: 1, n: 1 },
      { team_id: 2, n: 1 },
    ]);
  });
});
