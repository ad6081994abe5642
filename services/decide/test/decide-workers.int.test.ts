// main.ts with DECIDE_WORKERS=2 as a real process: two workers serve the port, both answer,
// SIGTERM stops them and the primary.
import { spawn } from 'node:child_process';
import net from 'node:net';
import path from 'node:path';
import readline from 'node:readline';
import { createPgPool } from '@sett/db';
import { createTestDatabase, type TestDatabase } from '@sett/testing';
import { createProject, insertFlag, REDIS_URL } from './support';

const MAIN = path.join(__dirname, '..', 'src', 'main.ts');

async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const { port } = server.address() as net.AddressInfo;
  await new Promise<void>((r) => server.close(() => r()));
  return port;
}

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

  const port = await freePort();
  const child = spawn(process.execPath, ['--import', 'tsx', MAIN], {
    env: {
      ...process.env,
      DATABASE_URL: db.url,
      REDIS_URL,
      DECIDE_PORT: String(port),
      DECIDE_WORKERS: '2',
      DECIDE_GEOIP_ENABLED: 'false',
      LOG_FORMAT: 'json',
      LOG_LEVEL: 'info',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const lines: string[] = [];
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  try {
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`workers not ready:\n${lines.join('\n')}`)), 20_000);
      for (const s of [child.stdout!, child.stderr!]) {
        readline.createInterface({ input: s }).on('line', (l) => {
          lines.push(l);
          const workersReady = lines.filter((x) => x.includes('"message":"decide worker ready"')).length;
          if (workersReady === 2 && lines.some((x) => x.includes('"message":"decide ready"'))) {
            clearTimeout(timer);
            resolve();
          }
        });
      }
    });
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
    child.kill('SIGTERM');
  }
  expect(await exited).toBe(0);
  expect(lines.some((l) => l.includes('"message":"decide stopped"'))).toBe(true);
  expect(lines.filter((l) => l.includes('"message":"decide worker stopped"')).length).toBe(2);
});
