// main.ts with DECIDE_WORKERS=2 as a real process: two workers serve the port, both answer,
// SIGTERM stops them and the primary.
import { createPgPool } from '@sett/db';
import { createTestDatabase, type TestDatabase } from '@sett/testing';
import { createProject, insertFlag, spawnDecideWorkers } from './support';

let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => {
  await db?.drop();
});

it('serves decide from two workers and stops them all on SIGTERM', async () => {
  const pool = createPgPool({ databaseUrl: db.url, max: 2 });
  // main.ts uses unprefixed Redis keys (per team id): start at an id no one else uses.
  await pool.query(`SELECT setval('teams_id_seq', $1)`, [
    1_000_000 + Math.floor(Math.random() * 1_000_000_000),
  ]);
  const project = await createProject({ pool });
  await insertFlag(pool, project.teamId, {
    key: 'everyone',
    filters: { groups: [{ properties: [], rollout_percentage: 100 }] },
  });
  await pool.end();

  const decide = await spawnDecideWorkers(db.url, 2);
  const { port, lines } = decide;
  let exitCode: number | null | undefined;
  try {
    const workerIds = new Set(
      lines
        .filter((l) => l.includes('"message":"decide worker ready"'))
        .map((l) => (JSON.parse(l) as { worker?: number }).worker),
    );
    expect(workerIds.size).toBe(2);
    for (let i = 0; i < 4; i++) {
      const res = await fetch(`http://127.0.0.1:${port}/decide/?v=4`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', connection: 'close' },
        body: JSON.stringify({ api_key: project.token, distinct_id: `u${i}` }),
      });
      expect(res.status).toBe(200);
      expect(
        ((await res.json()) as { flags: Record<string, { enabled: boolean }> }).flags.everyone!.enabled,
      ).toBe(true);
    }
  } finally {
    exitCode = await decide.stop();
  }
  expect(exitCode).toBe(0);
  expect(lines.some((l) => l.includes('"message":"decide stopped"'))).toBe(true);
  expect(lines.filter((l) => l.includes('"message":"decide worker stopped"')).length).toBe(2);
});
