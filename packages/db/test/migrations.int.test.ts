// The migrations, applied by `prisma migrate deploy` through our offline adapter, build the
// whole schema on an empty database, enforce the hand-written constraints, and are a no-op
// the second time.
import { randomBytes, randomUUID } from 'node:crypto';
import pg from 'pg';
import { ensureDatabase, migrateDeploy, quoteIdent, withDatabase, withMaintenanceClient } from '../src';

const serverUrl = process.env.DATABASE_URL || 'postgresql://root@127.0.0.1:5432/postgres';
const name = `sett_mig_${randomBytes(5).toString('hex')}`;
const url = withDatabase(serverUrl, name);
let client: pg.Client;

const TABLES = [
  'organizations',
  'organization_memberships',
  'teams',
  'users',
  'two_factor_backup_codes',
  'personal_api_keys',
  'feature_flags',
  'early_access_features',
  'persons',
  'person_distinct_ids',
  'group_type_mappings',
  'groups',
  'feature_flag_hash_key_overrides',
  'events',
];

/** Columns, indexes (with definitions), constraints and triggers of the public schema. */
async function schemaSnapshot(c: pg.Client): Promise<string> {
  const parts = await Promise.all([
    c.query(`SELECT table_name, column_name, data_type, is_nullable, column_default FROM information_schema.columns
             WHERE table_schema = 'public' ORDER BY table_name, column_name`),
    c.query(`SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = 'public' ORDER BY indexname`),
    c.query(`SELECT conname, pg_get_constraintdef(oid) AS def FROM pg_constraint
             WHERE connamespace = 'public'::regnamespace ORDER BY conname`),
    c.query(`SELECT tgname FROM pg_trigger WHERE NOT tgisinternal ORDER BY tgname`),
  ]);
  return JSON.stringify(parts.map((p) => p.rows));
}

beforeAll(async () => {
  expect(await ensureDatabase(url)).toBe(true);
  client = new pg.Client({ connectionString: url });
  await client.connect();
});

afterAll(async () => {
  await client?.end();
  await withMaintenanceClient(serverUrl, (c) =>
    c.query(`DROP DATABASE IF EXISTS ${quoteIdent(name)} WITH (FORCE)`),
  );
});

describe('prisma migrations', () => {
  let firstSnapshot: string;

  test('ensureDatabase is idempotent', async () => {
    expect(await ensureDatabase(url)).toBe(false);
  });

  test('migrate deploy builds every table on an empty database', async () => {
    const before = await client.query(`SELECT count(*)::int AS n FROM pg_tables WHERE schemaname = 'public'`);
    expect(before.rows[0].n).toBe(0);

    const { output } = await migrateDeploy({ databaseUrl: url });
    expect(output).toMatch(/successfully applied/i);

    const tables = await client.query(`SELECT tablename FROM pg_tables WHERE schemaname = 'public'`);
    const names = tables.rows.map((r) => r.tablename);
    for (const table of TABLES) expect(names).toContain(table);
    firstSnapshot = await schemaSnapshot(client);
  });

  test('the events primary key is (team_id, uuid) and events has no foreign keys', async () => {
    const pk = await client.query(
      `SELECT pg_get_constraintdef(oid) AS def FROM pg_constraint WHERE conrelid = 'events'::regclass AND contype = 'p'`,
    );
    expect(pk.rows[0].def).toBe('PRIMARY KEY (team_id, uuid)');
    const fks = await client.query(
      `SELECT 1 FROM pg_constraint WHERE conrelid = 'events'::regclass AND contype = 'f'`,
    );
    expect(fks.rowCount).toBe(0);
    // Partitioned by RANGE (uuid) (docs/data-lifecycle.md): the key above still holds across it.
    const partitioned = await client.query(`SELECT relkind FROM pg_class WHERE oid = 'events'::regclass`);
    expect(partitioned.rows[0].relkind).toBe('p');
    const key = await client.query(`SELECT pg_get_partkeydef('events'::regclass) AS def`);
    expect(key.rows[0].def).toBe('RANGE (uuid)');
  });

  test('a second migrate deploy applies nothing and leaves the schema unchanged', async () => {
    const applied = await client.query('SELECT count(*)::int AS n FROM _prisma_migrations');
    const { output } = await migrateDeploy({ databaseUrl: url });
    expect(output).toMatch(/No pending migrations to apply/);
    const after = await client.query('SELECT count(*)::int AS n FROM _prisma_migrations');
    expect(after.rows[0].n).toBe(applied.rows[0].n);
    expect(await schemaSnapshot(client)).toBe(firstSnapshot);
  });

  test('the partial unique index on live flag keys exists', async () => {
    const idx = await client.query(
      `SELECT indexdef FROM pg_indexes WHERE indexname = 'feature_flags_team_id_key_live_key'`,
    );
    expect(idx.rows[0]?.indexdef).toMatch(/CREATE UNIQUE INDEX .* \(team_id, key\) WHERE \(NOT deleted\)/);
  });

  describe('with a project', () => {
    let teamId: number;
    let otherTeamId: number;

    beforeAll(async () => {
      const org = await client.query(
        `INSERT INTO organizations (id, name, slug, updated_at) VALUES ($1, 'Org', $2, now()) RETURNING id`,
        [randomUUID(), `org-${randomUUID()}`],
      );
      const insertTeam = `INSERT INTO teams (uuid, organization_id, api_token, name, updated_at)
                          VALUES ($1, $2, $3, 'Project', now()) RETURNING id, project_id`;
      const team = await client.query(insertTeam, [randomUUID(), org.rows[0].id, `phc_${randomUUID()}`]);
      const other = await client.query(insertTeam, [randomUUID(), org.rows[0].id, `phc_${randomUUID()}`]);
      teamId = team.rows[0].id;
      otherTeamId = other.rows[0].id;
      // The trigger copies the serial id into project_id.
      expect(Number(team.rows[0].project_id)).toBe(teamId);
    });

    const insertFlag = (team: number, key: string, deleted = false) =>
      client.query(
        `INSERT INTO feature_flags (team_id, key, deleted, updated_at) VALUES ($1, $2, $3, now()) RETURNING id`,
        [team, key, deleted],
      );

    test('two live flags with the same key in one project are rejected', async () => {
      await insertFlag(teamId, 'checkout');
      await expect(insertFlag(teamId, 'checkout')).rejects.toMatchObject({ code: '23505' });
    });

    test('the same key is fine in another project', async () => {
      await expect(insertFlag(otherTeamId, 'checkout')).resolves.toBeTruthy();
    });

    test("a deleted flag's key can be reused, and deleted duplicates coexist", async () => {
      const first = await insertFlag(teamId, 'reused');
      await client.query('UPDATE feature_flags SET deleted = true WHERE id = $1', [first.rows[0].id]);
      await expect(insertFlag(teamId, 'reused')).resolves.toBeTruthy();
      await expect(insertFlag(teamId, 'reused', true)).resolves.toBeTruthy();
      await expect(insertFlag(teamId, 'reused')).rejects.toMatchObject({ code: '23505' });
    });

    test('group type index must be within 0..4', async () => {
      await expect(
        client.query(
          `INSERT INTO group_type_mappings (team_id, group_type, group_type_index) VALUES ($1, 'company', 4)`,
          [teamId],
        ),
      ).resolves.toBeTruthy();
      await expect(
        client.query(
          `INSERT INTO group_type_mappings (team_id, group_type, group_type_index) VALUES ($1, 'office', 5)`,
          [teamId],
        ),
      ).rejects.toMatchObject({ code: '23514' });
    });
  });
});
