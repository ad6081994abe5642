// /_metrics with DECIDE_WORKERS=2: whichever worker takes the scrape answers with the sum over
// both workers (the primary aggregates), so a counter never goes down between scrapes and ends
// at the number of requests sent, however the connections were spread over the workers.
import { gzipSync } from 'node:zlib';
import { createPgPool } from '@sett/db';
import { createTestDatabase, type TestDatabase } from '@sett/testing';
import { createProject, spawnDecideWorkers } from './support';

let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => {
  await db?.drop();
});

/** The route the Express decide routes count under (gzip bodies are served by Express). */
const ROUTE = '/decide/';

function requestsCounted(text: string): number {
  let total = 0;
  for (const line of text.split('\n')) {
    if (line.startsWith('http_requests_total{') && line.includes(`route="${ROUTE}"`))
      total += Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return total;
}

it('aggregates the HTTP counters of both workers on every scrape', async () => {
  const pool = createPgPool({ databaseUrl: db.url, max: 2 });
  await pool.query(`SELECT setval('teams_id_seq', $1)`, [
    1_000_000 + Math.floor(Math.random() * 1_000_000_000),
  ]);
  const project = await createProject({ pool });
  await pool.end();

  const decide = await spawnDecideWorkers(db.url, 2);
  let exitCode: number | null | undefined;
  try {
    const base = `http://127.0.0.1:${decide.port}`;
    // A new connection per request and per scrape: the primary deals them out to both workers.
    const scrape = async () => {
      const res = await fetch(`${base}/_metrics`, { headers: { connection: 'close' } });
      expect(res.status).toBe(200);
      return requestsCounted(await res.text());
    };
    const body = gzipSync(JSON.stringify({ api_key: project.token, distinct_id: 'u1' }));
    const post = async () => {
      const res = await fetch(`${base}/decide/?v=4`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'content-encoding': 'gzip', connection: 'close' },
        body,
      });
      expect(res.status).toBe(200);
      await res.arrayBuffer();
    };

    const N = 40;
    const seen: number[] = [];
    for (let sent = 0; sent < N; ) {
      for (let i = 0; i < 5; i++, sent++) await post();
      seen.push(await scrape());
      // Each scrape counts everything answered so far, on both workers.
      expect(seen[seen.length - 1]).toBe(sent);
    }
    for (let i = 0; i < 6; i++) seen.push(await scrape());
    for (let i = 1; i < seen.length; i++) expect(seen[i]).toBeGreaterThanOrEqual(seen[i - 1]!);
    expect(seen[seen.length - 1]).toBe(N);
  } finally {
    exitCode = await decide.stop();
  }
  expect(exitCode).toBe(0);
});
