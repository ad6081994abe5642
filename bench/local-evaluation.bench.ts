// `pnpm bench local-evaluation`: GET /flags/definitions, what every posthog-node/python server
// with local evaluation polls every 30 s, from the decide service (a child process running
// services/decide/src/main.ts) against a baseline plain node:http server answering the same
// bytes, headers and 304 rule (another child process). Two loads, each on both: pollers whose
// If-None-Match holds the current ETag (304, the steady state) and pollers without it (200 with
// the whole body). The project has 60 flags (multivariate, payloads, a group flag) and a
// personal API key with feature_flag:read; after the first request decide answers from its
// in-process copies (token, key, flag list, serialised body), so the ratio shows what key
// checking, routing and headers cost over writing fixed bytes.
import http from 'node:http';
import { randomUUID } from 'node:crypto';
import { createPersonalKey } from '@sett/cli';
import { createPgPool } from '@sett/db';
import {
  fmt,
  freePort,
  insertBenchProject,
  load,
  ratioLine,
  scratchDatabase,
  startChild,
  type LoadResult,
  startDecide,
} from './lib';

const BASELINE_ENV = 'SETT_LOCAL_EVALUATION_BENCH_BASELINE';
const SECONDS = 6;
const CONNECTIONS = 100;
const FLAGS = 60;

// Baseline role: the same bytes and headers for any request, 304 when If-None-Match is the ETag.
if (process.env[BASELINE_ENV]) {
  const { port, body, headers, etag } = JSON.parse(process.env[BASELINE_ENV]!) as {
    port: number;
    body: string;
    etag: string;
    headers: Record<string, string>;
  };
  const bytes = Buffer.from(body);
  http
    .createServer((req, res) => {
      if (req.headers['if-none-match'] === etag) {
        res.writeHead(304, { ETag: etag, 'Cache-Control': headers['cache-control'] ?? '' });
        res.end();
        return;
      }
      res.writeHead(200, { ...headers, 'Content-Length': bytes.length });
      res.end(bytes);
    })
    .listen(port, '127.0.0.1', () => process.stdout.write('baseline ready\n'));
}

function flagFilters(i: number) {
  if (i % 3 === 0)
    return {
      groups: [
        {
          properties: [{ key: 'email', type: 'person', operator: 'icontains', value: '@example.com' }],
          rollout_percentage: 100,
        },
        { properties: [], rollout_percentage: 30 },
      ],
      multivariate: {
        variants: [
          { key: 'control', rollout_percentage: 50 },
          { key: 'test', rollout_percentage: 50 },
        ],
      },
      payloads: { control: '{"color":"blue"}', test: '{"color":"red","size":12}' },
    };
  if (i % 3 === 1)
    return {
      aggregation_group_type_index: 0,
      groups: [
        {
          properties: [
            { key: 'plan', type: 'group', group_type_index: 0, value: ['enterprise'], operator: 'exact' },
          ],
          rollout_percentage: 100,
        },
      ],
    };
  return { groups: [{ properties: [], rollout_percentage: 25 }], payloads: { true: '{"enabled":true}' } };
}

async function prepare(serverUrl: string) {
  const name = `sett_bench_local_evaluation_${process.pid}`;
  const { url, drop } = await scratchDatabase(serverUrl, name);
  const pool = createPgPool({ databaseUrl: url, max: 2 });
  try {
    const { organizationId, token, teamId } = await insertBenchProject(pool);
    await pool.query(
      `INSERT INTO group_type_mappings (team_id, group_type, group_type_index) VALUES ($1, 'company', 0)`,
      [teamId],
    );
    for (let i = 0; i < FLAGS; i++) {
      await pool.query(`INSERT INTO feature_flags (team_id, key, name, filters) VALUES ($1, $2, $3, $4)`, [
        teamId,
        `flag-${i}`,
        `Flag ${i}`,
        JSON.stringify(flagFilters(i)),
      ]);
    }
    const user = await pool.query<{ id: number; uuid: string }>(
      `INSERT INTO users (uuid, distinct_id, email) VALUES (gen_random_uuid(), $1, $2) RETURNING id, uuid`,
      [randomUUID(), `bench-${organizationId}@example.test`],
    );
    await pool.query(
      'INSERT INTO organization_memberships (id, organization_id, user_id) VALUES (gen_random_uuid(), $1, $2)',
      [organizationId, user.rows[0]!.id],
    );
    const { personal_api_key: key } = await createPersonalKey({
      databaseUrl: url,
      userUuid: user.rows[0]!.uuid,
      scopes: ['feature_flag:read'],
      label: 'bench',
    });
    return { url, drop, token, key };
  } finally {
    await pool.end();
  }
}

function line(label: string, r: LoadResult): string {
  return `${label} ${fmt(r.rps)} req/s, p50 ${r.p50} ms, p99 ${r.p99} ms, errors ${r.errors}\n`;
}

export async function run(): Promise<boolean> {
  const serverUrl = process.env.DATABASE_URL || 'postgresql://root@127.0.0.1:5432/sett';
  const db = await prepare(serverUrl);
  const baselinePort = await freePort();
  const decide = await startDecide(db.url);
  const decidePort = decide.port;
  let baseline: Awaited<ReturnType<typeof startChild>> | undefined;
  try {
    const path = `/flags/definitions?token=${db.token}&send_cohorts`;
    const auth = { authorization: `Bearer ${db.key}` };
    const sample = await fetch(`http://127.0.0.1:${decidePort}${path}`, { headers: auth });
    const body = await sample.text();
    if (sample.status !== 200) throw new Error(`decide answered ${sample.status}: ${body}`);
    const etag = sample.headers.get('etag')!;
    const again = await fetch(`http://127.0.0.1:${decidePort}${path}`, {
      headers: { ...auth, 'if-none-match': etag },
    });
    if (again.status !== 304) throw new Error(`decide answered ${again.status} to If-None-Match`);
    const headers: Record<string, string> = {};
    for (const name of ['content-type', 'cache-control', 'etag'])
      headers[name] = sample.headers.get(name) ?? '';
    process.stdout.write(`body: ${body.length} bytes, ${FLAGS} flags, ${CONNECTIONS} concurrent pollers\n`);
    baseline = await startChild(
      __filename,
      { [BASELINE_ENV]: JSON.stringify({ port: baselinePort, body, headers, etag }) },
      /baseline ready/,
    );
    const urls = {
      subject: `http://127.0.0.1:${decidePort}${path}`,
      base: `http://127.0.0.1:${baselinePort}${path}`,
    };
    const results: Record<string, { subject: LoadResult; base: LoadResult }> = {};
    for (const [label, extra] of [
      ['304 (If-None-Match)', { 'if-none-match': etag }],
      ['200 (full body)', {}],
    ] as const) {
      const opts = { method: 'GET' as const, headers: { ...auth, ...extra }, connections: CONNECTIONS };
      await load({ ...opts, url: urls.subject, durationSeconds: 1 });
      const subject = await load({ ...opts, url: urls.subject, durationSeconds: SECONDS });
      const base = await load({ ...opts, url: urls.base, durationSeconds: SECONDS });
      results[label] = { subject, base };
      process.stdout.write(
        `${label}\n` +
          line('  local evaluation:', subject) +
          line('  baseline:        ', base) +
          `  ${ratioLine('throughput', subject.rps, base.rps, 'req/s')}\n` +
          `  at one poll per 30 s that is ${fmt(subject.rps * 30)} servers per decide process\n`,
      );
    }
    const ok = Object.values(results).every((r) => r.subject.errors === 0 && r.subject.timeouts === 0);
    // autocannon counts 304s as non-2xx: the 200 run must have none.
    return ok && results['200 (full body)']!.subject.non2xx === 0;
  } finally {
    await baseline?.stop();
    await decide.stop();
    await db.drop();
  }
}
