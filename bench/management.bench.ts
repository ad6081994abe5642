// `pnpm bench management`: 10k users and 10k early access features (with their flags) inserted
// in bulk into a scratch database; the management service runs in a child process and is
// loaded on list pages and retrieves. Baseline, in the same run: a bare http server in another
// child process (same pool size) answering the same data straight from pg, no auth, no
// shaping: for lists the same page in the same order plus the total count (what the service
// needs at least, the early access features with their flag joined), for retrieves the same
// row (the feature with its flag). Each endpoint is loaded for DURATION_S, service then
// baseline in three alternating rounds (autocannon's `amount` would override the duration, so
// none is set); prints requests/s, p99 and the ratios. MGMT_BENCH_PROFILE=<dir> writes the service's CPU profile there;
// MGMT_BENCH_ONLY=<text> runs only the cases whose name contains it.
// Started as a script with MGMT_BENCH_BASELINE=1 this file IS that baseline server.
import http from 'node:http';
import path from 'node:path';
import pg from 'pg';
import { ensureDatabase, migrateDeploy, quoteIdent, withDatabase, withMaintenanceClient } from '@sett/db';
import { createPersonalKey } from '@sett/cli';
import { fmt, load, ratioLine, startChild, type LoadResult } from './lib';

const SERVER_URL = process.env.DATABASE_URL || 'postgresql://root@127.0.0.1:5432/postgres';
const N = 10_000;
const OFFSET = 5_000;
const DURATION_S = 6;
const ROUNDS = 3;
const CONNECTIONS = 16;

export async function seed(
  url: string,
): Promise<{ key: string; teamId: number; userUuid: string; featureId: string }> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const org = (
      await client.query<{ id: string }>(
        `INSERT INTO organizations (id, name, slug) VALUES (gen_random_uuid(), 'Bench', 'bench') RETURNING id`,
      )
    ).rows[0]!.id;
    const teamId = (
      await client.query<{ id: number }>(
        `INSERT INTO teams (uuid, organization_id, name, api_token) VALUES (gen_random_uuid(), $1, 'Bench', 'phc_bench_${Date.now()}') RETURNING id`,
        [org],
      )
    ).rows[0]!.id;
    await client.query(
      `INSERT INTO users (uuid, distinct_id, email, first_name, current_organization_id, current_team_id)
       SELECT gen_random_uuid(), 'd' || g, 'u' || g || '@bench.test', 'User ' || g, $1, $2 FROM generate_series(1, ${N}) g`,
      [org, teamId],
    );
    await client.query(
      `INSERT INTO organization_memberships (id, organization_id, user_id, level) SELECT gen_random_uuid(), $1, id, CASE WHEN email = 'u1@bench.test' THEN 15 ELSE 1 END FROM users`,
      [org],
    );
    await client.query(
      `INSERT INTO feature_flags (team_id, key, name, filters) SELECT $1, 'flag-' || g, 'Flag ' || g, '{"groups":[{"properties":[],"rollout_percentage":50}]}' FROM generate_series(1, ${N}) g`,
      [teamId],
    );
    await client.query(
      `INSERT INTO early_access_features (id, team_id, feature_flag_id, name, description, stage, created_at)
       SELECT gen_random_uuid(), $1, f.id, 'Feature ' || f.id, 'bench', 'beta', now() - f.id * interval '1 second' FROM feature_flags f`,
      [teamId],
    );
    await client.query('ANALYZE');
    const owner = (
      await client.query<{ uuid: string }>(`SELECT uuid FROM users WHERE email = 'u1@bench.test'`)
    ).rows[0]!.uuid;
    const key = (
      await createPersonalKey({ databaseUrl: url, userUuid: owner, scopes: ['*'], label: 'bench' })
    ).personal_api_key;
    const userUuid = (
      await client.query<{ uuid: string }>(`SELECT uuid FROM users ORDER BY id OFFSET ${OFFSET} LIMIT 1`)
    ).rows[0]!.uuid;
    const featureId = (
      await client.query<{ id: string }>(
        `SELECT id FROM early_access_features ORDER BY created_at DESC OFFSET ${OFFSET} LIMIT 1`,
      )
    ).rows[0]!.id;
    return { key, teamId, userUuid, featureId };
  } finally {
    await client.end();
  }
}

/** The baseline: the same rows of the same page, one query each, straight to JSON. */
async function baselineServer() {
  const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: 10 });
  const server = http.createServer(async (req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    const offset = Number(url.searchParams.get('offset') ?? 0);
    let rows: unknown;
    if (url.pathname === '/users') {
      rows = (
        await pool.query(
          `SELECT (SELECT count(*) FROM users) AS count,
             (SELECT json_agg(u ORDER BY u.id) FROM (SELECT * FROM users ORDER BY id LIMIT 100 OFFSET $1) u) AS results`,
          [offset],
        )
      ).rows[0];
    } else if (url.pathname.startsWith('/users/')) {
      rows = (await pool.query('SELECT * FROM users WHERE uuid = $1', [url.pathname.slice(7)])).rows[0];
    } else if (url.pathname === '/eaf') {
      rows = (
        await pool.query(
          `SELECT (SELECT count(*) FROM early_access_features WHERE team_id = $1) AS count,
             (SELECT json_agg(p ORDER BY p.created_at DESC, p.id DESC) FROM (
                SELECT e.*, row_to_json(f) AS feature_flag
                FROM (SELECT * FROM early_access_features WHERE team_id = $1
                      ORDER BY created_at DESC, id DESC LIMIT 100 OFFSET $2) e
                LEFT JOIN feature_flags f ON f.id = e.feature_flag_id) p) AS results`,
          [Number(url.searchParams.get('team')), offset],
        )
      ).rows[0];
    } else {
      rows = (
        await pool.query(
          'SELECT e.*, row_to_json(f) AS feature_flag FROM early_access_features e LEFT JOIN feature_flags f ON f.id = e.feature_flag_id WHERE e.id = $1',
          [url.pathname.slice(5)],
        )
      ).rows[0];
    }
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify(rows));
  });
  server.listen(Number(process.env.MGMT_BENCH_BASELINE_PORT), '127.0.0.1', () =>
    process.stdout.write('baseline ready\n'),
  );
  process.once('SIGTERM', () => server.close(() => pool.end().then(() => process.exit(0))));
}

/** ROUNDS alternating loads of `subject` and `baseline`; rates over the whole time, worst p99. */
async function interleaved(
  subject: string,
  headers: Record<string, string>,
  baseline: string,
  baselineHeaders: Record<string, string> = {},
): Promise<{ subject: LoadResult; baseline: LoadResult }> {
  const runs: { subject: LoadResult[]; baseline: LoadResult[] } = { subject: [], baseline: [] };
  for (let i = 0; i < ROUNDS; i++) {
    const opts = { method: 'GET', connections: CONNECTIONS, durationSeconds: DURATION_S / ROUNDS } as const;
    runs.subject.push(await load({ ...opts, url: subject, headers }));
    runs.baseline.push(await load({ ...opts, url: baseline, headers: baselineHeaders }));
  }
  const merge = (rs: LoadResult[]): LoadResult => ({
    requests: rs.reduce((n, r) => n + r.requests, 0),
    rps: rs.reduce((n, r) => n + r.rps, 0) / rs.length,
    p50: Math.max(...rs.map((r) => r.p50)),
    p99: Math.max(...rs.map((r) => r.p99)),
    non2xx: rs.reduce((n, r) => n + r.non2xx, 0),
    errors: rs.reduce((n, r) => n + r.errors, 0),
    timeouts: rs.reduce((n, r) => n + r.timeouts, 0),
  });
  return { subject: merge(runs.subject), baseline: merge(runs.baseline) };
}

export async function run(): Promise<boolean> {
  const dbName = `sett_bench_mgmt_${Date.now().toString(36)}`;
  const url = withDatabase(SERVER_URL, dbName);
  await ensureDatabase(url);
  const stops: Array<() => Promise<void>> = [];
  try {
    await migrateDeploy({ databaseUrl: url });
    const t0 = Date.now();
    const { key, teamId, userUuid, featureId } = await seed(url);
    process.stdout.write(`seeded ${N} users and ${N} early access features in ${Date.now() - t0} ms\n`);

    const port = 20_000 + Math.floor(Math.random() * 20_000);
    const service = await startChild(
      'services/management/src/main.ts',
      {
        DATABASE_URL: url,
        MANAGEMENT_PORT: String(port),
        HOST: '127.0.0.1',
        LOG_LEVEL: 'info',
        MANAGEMENT_RATE_LIMIT_PER_MINUTE: '1000000',
        MANAGEMENT_USER_RATE_LIMIT_PER_MINUTE: '1000000',
        // MGMT_BENCH_PROFILE=<dir>: the service writes a V8 CPU profile there when it stops
        // (--cpu-prof itself is refused in NODE_OPTIONS; the preload does the same).
        ...(process.env.MGMT_BENCH_PROFILE
          ? {
              NODE_OPTIONS: `--import ${path.join(__dirname, 'cpu-profile-preload.mjs')}`,
              SETT_CPU_PROFILE_DIR: process.env.MGMT_BENCH_PROFILE,
            }
          : {}),
        DATABASE_POOL_SIZE: '10',
      },
      /management ready/,
    );
    stops.push(() => service.stop());
    const basePort = port + 1;
    const baseline = await startChild(
      'bench/management.bench.ts',
      { DATABASE_URL: url, MGMT_BENCH_BASELINE: '1', MGMT_BENCH_BASELINE_PORT: String(basePort) },
      /baseline ready/,
    );
    stops.push(() => baseline.stop());
    const api = `http://127.0.0.1:${port}`;
    const base = `http://127.0.0.1:${basePort}`;
    const headers = { authorization: `Bearer ${key}` };
    const cases: Array<[string, string, string]> = [
      [
        'users list (100/page, offset 5000)',
        `${api}/api/users/?limit=100&offset=${OFFSET}`,
        `${base}/users?offset=${OFFSET}`,
      ],
      ['user retrieve', `${api}/api/users/${userUuid}/`, `${base}/users/${userUuid}`],
      [
        'early access features list (100/page, offset 5000)',
        `${api}/api/projects/${teamId}/early_access_feature/?limit=100&offset=${OFFSET}`,
        `${base}/eaf?team=${teamId}&offset=${OFFSET}`,
      ],
      [
        'early access feature retrieve',
        `${api}/api/projects/${teamId}/early_access_feature/${featureId}/`,
        `${base}/eaf/${featureId}`,
      ],
    ];
    // MGMT_BENCH_ONLY=<text>: only the cases whose name contains it (a profile of one route).
    const only = process.env.MGMT_BENCH_ONLY;
    if (only) cases.splice(0, cases.length, ...cases.filter(([name]) => name.includes(only)));
    // Sanity: both answer 200 before measuring, and the pages are full.
    for (const [name, subject, baselineUrl] of cases) {
      for (const u of [subject, baselineUrl]) {
        const r = await fetch(u, { headers });
        const body = (await r.json()) as { results?: unknown[] };
        if (r.status !== 200 || (body.results && body.results.length !== 100))
          throw new Error(`${name}: ${r.status} ${JSON.stringify(body).slice(0, 300)}`);
      }
    }
    let ok = true;
    for (const [name, subject, baselineUrl] of cases) {
      // Interleaved rounds (service, baseline, service, …): on a shared, noisy machine a slow
      // spell then hits both sides instead of deciding the ratio alone.
      const s = await interleaved(subject, headers, baselineUrl);
      const b = s.baseline;
      if (s.subject.non2xx || s.subject.errors) ok = false;
      process.stdout.write(
        `\n${name}: sett ${fmt(s.subject.rps)} req/s p99 ${s.subject.p99} ms (non2xx ${s.subject.non2xx}, errors ${s.subject.errors}); pg baseline ${fmt(b.rps)} req/s p99 ${b.p99} ms\n`,
      );
      process.stdout.write(`  ${ratioLine('throughput', s.subject.rps, b.rps, 'req/s')}\n`);
      process.stdout.write(`  ${ratioLine('p99', s.subject.p99, b.p99, 'ms')}\n`);
    }
    return ok;
  } finally {
    for (const stop of stops.reverse()) await stop();
    await withMaintenanceClient(SERVER_URL, (c) =>
      c.query(`DROP DATABASE IF EXISTS ${quoteIdent(dbName)} WITH (FORCE)`),
    );
  }
}

if (require.main === module && process.env.MGMT_BENCH_BASELINE === '1') void baselineServer();
