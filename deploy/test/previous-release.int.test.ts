// Expand and contract, checked: the previous release's services keep working on the newest
// schema, as they must during a rolling upgrade (docs/operations.md, "Upgrades").
//
// "Previous release" is the code just before the newest migration: the parent of the commit
// that added it (or HEAD, while that migration is not committed yet). That tree is exported with
// `git archive` into a temporary directory and installed from pnpm's store (`--prefer-offline`:
// the network only for a package the store lacks); its own ingestion and management then run
// against a database with every current migration applied. Ingestion must store an event with
// its person, management must read and update the project and read the user. Costs about
// 10-20 s: the export and install, two process starts and one event.
import { execFileSync, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { localMigrations } from '@sett/db';
import { startDevBroker, type DevBroker } from '@sett/devstack';
import { createKafkajsProducer, createKafka, TOPICS } from '@sett/kafka';
import { generatePersonalApiKey, hashPersonalApiKey, maskKey } from '@sett/keys';
import { createTestDatabase, endPool, type TestDatabase } from '@sett/testing';
import { spawnService, waitFor } from './promtool';

jest.setTimeout(180_000);

const root = path.resolve(__dirname, '../..');
const git = (...args: string[]) => execFileSync('git', args, { cwd: root, encoding: 'utf8' }).trim();

/** The commit whose code ran on the schema before the newest migration. */
function previousRelease(): { commit: string; newest: string } {
  const newest = execFileSync('ls', [path.join(root, 'prisma', 'migrations')], { encoding: 'utf8' })
    .split('\n')
    .filter((n) => /^\d{14}_/.test(n))
    .sort()
    .at(-1)!;
  if (git('rev-parse', '--is-shallow-repository') === 'true')
    throw new Error(
      'the git history is shallow: fetch it (git fetch --unshallow) to find the previous release',
    );
  const added = git(
    'log',
    '--diff-filter=A',
    '--format=%H',
    '-1',
    '--',
    `prisma/migrations/${newest}/migration.sql`,
  );
  return { commit: added ? git('rev-parse', `${added}^`) : git('rev-parse', 'HEAD'), newest };
}

let dir: string;
let broker: DevBroker;
let db: TestDatabase;
let pool: pg.Pool;
const children: ChildProcess[] = [];

beforeAll(async () => {
  const { commit, newest } = previousRelease();
  // The test is only meaningful when the previous release lacks the newest migration.
  expect(git('ls-tree', '--name-only', commit, 'prisma/migrations/').split('\n')).not.toContain(
    `prisma/migrations/${newest}`,
  );
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sett-previous-release-'));
  execFileSync('sh', ['-c', `git archive ${commit} | tar -x -C "${dir}"`], { cwd: root });
  execFileSync('pnpm', ['install', '--frozen-lockfile', '--prefer-offline', '--reporter=silent'], {
    cwd: dir,
    env: { ...process.env, CI: 'true', DATABASE_URL: 'postgresql://build@127.0.0.1:5432/build' },
    stdio: 'pipe',
    timeout: 120_000,
  });
  [broker, db] = await Promise.all([startDevBroker({ partitions: 1 }), createTestDatabase()]);
  pool = new pg.Pool({ connectionString: db.url, max: 2 });
  const { rows } = await pool.query<{ migration_name: string }>(
    'SELECT migration_name FROM _prisma_migrations',
  );
  expect(rows.map((r) => r.migration_name).sort()).toEqual((await localMigrations()).map((m) => m.name));
});

afterAll(async () => {
  for (const c of children) c.kill('SIGKILL');
  if (pool) await endPool(pool);
  await broker?.stop();
  await db?.drop();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

it("the previous release's ingestion and management work on the newest schema", async () => {
  const org = randomUUID();
  const token = `phc_${randomUUID().replace(/-/g, '')}`;
  await pool.query(`INSERT INTO organizations (id, name, slug) VALUES ($1, 'prev', $2)`, [
    org,
    `prev-${org}`,
  ]);
  const team = (
    await pool.query<{ id: number }>(
      `INSERT INTO teams (uuid, organization_id, api_token, name) VALUES ($1, $2, $3, 'prev') RETURNING id`,
      [randomUUID(), org, token],
    )
  ).rows[0]!.id;
  const user = (
    await pool.query<{ id: number; uuid: string }>(
      `INSERT INTO users (uuid, distinct_id, email, current_organization_id, current_team_id)
       VALUES ($1, $2, 'prev@example.com', $3, $4) RETURNING id, uuid`,
      [randomUUID(), randomUUID(), org, team],
    )
  ).rows[0]!;
  await pool.query(
    `INSERT INTO organization_memberships (id, organization_id, user_id, level) VALUES ($1, $2, $3, 15)`,
    [randomUUID(), org, user.id],
  );
  const key = generatePersonalApiKey();
  await pool.query(
    `INSERT INTO personal_api_keys (id, user_id, label, secure_value, mask_value, scopes) VALUES ($1, $2, 'prev', $3, $4, '{*}')`,
    [randomUUID().slice(0, 12), user.id, hashPersonalApiKey(key), maskKey(key)],
  );

  const env = { DATABASE_URL: db.url, KAFKA_BROKERS: broker.bootstrap, NODE_ENV: 'test' };
  const ingestion = await spawnService(
    'ingestion',
    {
      ...env,
      INGESTION_PORT: '0',
      INGESTION_TOPICS: 'main',
      INGESTION_SESSION_TIMEOUT_MS: '3000',
      INGESTION_HEARTBEAT_INTERVAL_MS: '300',
      INGESTION_MAX_WAIT_MS: '100',
    },
    dir,
  );
  children.push(ingestion.child);
  const management = await spawnService(
    'management',
    { ...env, MANAGEMENT_PORT: '0', JOBS_ENABLED: 'false' },
    dir,
  );
  children.push(management.child);
  await waitFor(
    'the old ingestion to consume',
    async () => (await fetch(`${ingestion.base}/_ready`)).status === 200,
  );

  const kafka = createKafka({
    brokers: [broker.bootstrap],
    clientId: 'previous-release',
    logLevel: 'nothing',
  });
  const producer = createKafkajsProducer({ kafka, lingerMs: 1 });
  await producer.connect();
  const uuid = randomUUID();
  const now = new Date().toISOString();
  await producer.send(TOPICS.main, [
    {
      key: `${token}:prev-user`,
      value: Buffer.from(
        JSON.stringify({
          uuid,
          token,
          distinct_id: 'prev-user',
          ip: '81.2.69.142',
          now,
          sent_at: null,
          event: 'from the previous release',
          properties: { $set: { plan: 'pro' } },
          timestamp: now,
          historical_migration: false,
        }),
      ),
    },
  ]);
  await producer.disconnect();
  await waitFor('the event, stored by the old ingestion', async () => {
    const { rows } = await pool.query('SELECT 1 FROM events WHERE team_id = $1 AND uuid = $2', [team, uuid]);
    return rows.length === 1;
  });
  const { rows: persons } = await pool.query<{ properties: Record<string, unknown> }>(
    'SELECT properties FROM persons WHERE team_id = $1',
    [team],
  );
  expect(persons).toEqual([{ properties: expect.objectContaining({ plan: 'pro' }) }]);

  const call = (method: string, p: string, body?: unknown) =>
    fetch(`${management.base}${p}`, {
      method,
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  const project = await call('GET', `/api/projects/${team}/`);
  expect(project.status).toBe(200);
  expect(await project.json()).toMatchObject({ id: team, api_token: token });
  const renamed = await call('PATCH', `/api/projects/${team}/`, { name: 'renamed by the previous release' });
  expect(renamed.status).toBe(200);
  const me = await call('GET', '/api/users/@me/');
  expect(me.status).toBe(200);
  expect(await me.json()).toMatchObject({ uuid: user.uuid, email: 'prev@example.com' });
});
