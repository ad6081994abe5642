// `pnpm bench query-isolation`: what heavy queries of two organizations cost a third. A
// management process (production settings: its query pool, the caps in Redis, the deadline)
// serves three organizations of one database: A and B each own a project of 300,000 events, C one
// of 100,000. Twenty clients of A and B send heavy trends queries (3 series of 20 regex filters
// over 30 days) in a loop, honouring Retry-After when the caps refuse them, while C sends a small
// trends query (one event, 7 days) and a probe reads /_ready, one after the other. The same small
// query and /_ready alone, in the same run, are the baseline.
// Target: under the load, C's query and /_ready keep p99 under 200 ms, and nothing answers 503.
// Data is loaded once and kept (database sett_bench_query_isolation; QUERY_BENCH_RELOAD=1 reloads).
import pg from 'pg';
import { ensureDatabase, migrateDeploy, withDatabase } from '@sett/db';
import { benchOwnerKey, freePort, startChild } from './lib';

const SERVER_URL = process.env.DATABASE_URL || 'postgresql://root@127.0.0.1:5432/postgres';
const HEAVY_EVENTS = 300_000;
const SMALL_EVENTS = 100_000;
const HEAVY_CLIENTS = 20;
const PROBES = 150;

interface Tenant {
  teamId: number;
  key: string;
}

async function tenant(client: pg.Client, url: string, name: string, events: number): Promise<Tenant> {
  const found = await client.query<{ id: number; n: string }>(
    `SELECT t.id, (SELECT count(*) FROM events e WHERE e.team_id = t.id) AS n FROM teams t WHERE t.name = $1`,
    [name],
  );
  let teamId = found.rows[0]?.id;
  if (teamId === undefined || Number(found.rows[0]!.n) !== events || process.env.QUERY_BENCH_RELOAD) {
    if (teamId !== undefined) await client.query('DELETE FROM events WHERE team_id = $1', [teamId]);
    else {
      const org = (
        await client.query<{ id: string }>(
          `INSERT INTO organizations (id, name, slug) VALUES (gen_random_uuid(), $1, $1 || '-' || gen_random_uuid()) RETURNING id`,
          [name],
        )
      ).rows[0]!.id;
      teamId = (
        await client.query<{ id: number }>(
          `INSERT INTO teams (uuid, organization_id, name, api_token)
           VALUES (gen_random_uuid(), $1, $2, 'phc_' || replace(gen_random_uuid()::text, '-', '')) RETURNING id`,
          [org, name],
        )
      ).rows[0]!.id;
    }
    await client.query(
      `INSERT INTO events (uuid, team_id, event, distinct_id, timestamp, properties)
       SELECT gen_random_uuid(), $1, 'event_' || floor(power(random(), 3) * 20)::int, 'u' || (i % 20000),
              now() - random() * interval '30 days',
              jsonb_build_object('$current_url', 'https://example.com/' || repeat('path/', 8) || i,
                                 '$browser', (ARRAY['Chrome','Safari','Firefox','Edge'])[1 + i % 4])
         FROM generate_series(1, $2) AS i`,
      [teamId, events],
    );
    await client.query('ANALYZE events');
  }
  const key = await benchOwnerKey(client, url, teamId, ['query:read']);
  return { teamId, key };
}

const heavyQuery = (n: number) => ({
  kind: 'TrendsQuery',
  series: [0, 1, 2].map((s) => ({
    kind: 'EventsNode',
    event: null,
    properties: Array.from({ length: 20 }, (_, i) => ({
      key: '$current_url',
      value: `(path/){${i % 5}}.*x${n}s${s}f${i}|example`,
      operator: 'regex',
    })),
  })),
  dateRange: { date_from: '-30d' },
});

const smallQuery = {
  kind: 'TrendsQuery',
  series: [{ kind: 'EventsNode', event: 'event_1' }],
  dateRange: { date_from: '-7d' },
};

function percentile(ms: number[], p: number): number {
  const sorted = [...ms].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil(sorted.length * p) - 1)] ?? 0;
}

export async function run(): Promise<boolean> {
  const url = withDatabase(SERVER_URL, 'sett_bench_query_isolation');
  await ensureDatabase(url);
  await migrateDeploy({ databaseUrl: url });
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  const t0 = Date.now();
  const [a, b, c] = [
    await tenant(client, url, 'Isolation A', HEAVY_EVENTS),
    await tenant(client, url, 'Isolation B', HEAVY_EVENTS),
    await tenant(client, url, 'Isolation C', SMALL_EVENTS),
  ];
  await client.end();
  process.stdout.write(`data ready in ${Date.now() - t0} ms\n`);

  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const service = await startChild(
    'services/management/src/main.ts',
    {
      DATABASE_URL: url,
      MANAGEMENT_PORT: String(port),
      HOST: '127.0.0.1',
      NODE_ENV: 'production',
      SETT_ENCRYPTION_KEY: '0'.repeat(64),
      LOG_LEVEL: 'info',
      JOBS_ENABLED: 'false',
      SETT_PUBLIC_URL: 'http://127.0.0.1',
      MANAGEMENT_RATE_LIMIT_PER_MINUTE: '1000000',
      MANAGEMENT_USER_RATE_LIMIT_PER_MINUTE: '1000000',
    },
    /management ready/,
  );
  const post = (t: Tenant, query: object) =>
    fetch(`${base}/api/projects/${t.teamId}/query/`, {
      method: 'POST',
      headers: { authorization: `Bearer ${t.key}`, 'content-type': 'application/json' },
      // Computed every time: the small query must really run beside the heavy ones.
      body: JSON.stringify({ query, refresh: 'force_blocking' }),
    });
  const statuses = new Map<string, number>();
  const count = (what: string, status: number) =>
    statuses.set(`${what} ${status}`, (statuses.get(`${what} ${status}`) ?? 0) + 1);

  /** C's small query and /_ready in turn, PROBES times each: their latencies. */
  const probe = async (phase: string) => {
    const small: number[] = [];
    const ready: number[] = [];
    for (let i = 0; i < PROBES; i++) {
      let started = performance.now();
      const q = await post(c, smallQuery);
      await q.arrayBuffer();
      small.push(performance.now() - started);
      count(`${phase} small query`, q.status);
      started = performance.now();
      const r = await fetch(`${base}/_ready`);
      await r.arrayBuffer();
      ready.push(performance.now() - started);
      count(`${phase} /_ready`, r.status);
    }
    return { small, ready };
  };

  try {
    await probe('warm-up');
    statuses.clear();
    const alone = await probe('alone');
    let stop = false;
    let heavyRunning = 0;
    const heavy = Array.from({ length: HEAVY_CLIENTS }, async (_, i) => {
      const who = i % 2 === 0 ? a : b;
      for (let n = 0; !stop; n++) {
        heavyRunning++;
        const res = await post(who, heavyQuery(i * 1000 + n));
        heavyRunning--;
        await res.arrayBuffer();
        count('heavy', res.status);
        const wait = Number(res.headers.get('retry-after') ?? 0);
        if (wait > 0) await new Promise((r) => setTimeout(r, wait * 1000));
      }
    });
    // Measured once the heavy queries hold the slots they may have.
    while (heavyRunning < HEAVY_CLIENTS / 2) await new Promise((r) => setTimeout(r, 20));
    await new Promise((r) => setTimeout(r, 500));
    const loaded = await probe('loaded');
    stop = true;
    await Promise.all(heavy);

    process.stdout.write(
      `\n${HEAVY_CLIENTS} heavy clients (A and B, 300k events each) against C's small query (100k events), ${PROBES} probes each\n`,
    );
    process.stdout.write(
      '| path | alone p50 ms | alone p99 ms | under load p50 ms | under load p99 ms | p99 ratio (load / alone) |\n|---|---|---|---|---|---|\n',
    );
    let ok = true;
    for (const [name, before, during] of [
      ["C's small trends query", alone.small, loaded.small],
      ['/_ready', alone.ready, loaded.ready],
    ] as const) {
      const p99 = percentile(during, 0.99);
      if (p99 >= 200) ok = false;
      process.stdout.write(
        `| ${name} | ${percentile(before, 0.5).toFixed(1)} | ${percentile(before, 0.99).toFixed(1)} | ${percentile(during, 0.5).toFixed(1)} | ${p99.toFixed(1)} | ${(p99 / percentile(before, 0.99)).toFixed(2)} |\n`,
      );
    }
    const seen = [...statuses].sort().map(([k, v]) => `${k}: ${v}`);
    process.stdout.write(`answers: ${seen.join(', ')}\n`);
    if (
      [...statuses.keys()].some((k) => k.endsWith(' 503') || (!k.startsWith('heavy') && !k.endsWith(' 200')))
    )
      ok = false;
    process.stdout.write(`${ok ? 'PASS' : 'MISS'} under load: p99 < 200 ms for both, no 503, C always 200\n`);
    return ok;
  } finally {
    await service.stop();
  }
}
