// `pnpm bench remote-config`: GET /array/<token>/config (what every page load of every site
// fetches) from the decide service (a child process running services/decide/src/main.ts)
// against a baseline plain node:http server answering the same bytes with the same headers
// (another child process). Steady state is measured: after the first request the document is
// in decide's in-process copy (refreshed from one Redis GET every DECIDE_FLAG_CACHE_TTL_MS), so
// the ratio shows what token resolution, routing and headers cost over writing fixed bytes.
import http from 'node:http';
import { createPgPool } from '@sett/db';
import {
  fmt,
  freePort,
  insertBenchProject,
  load,
  ratioLine,
  scratchDatabase,
  startChild,
  startDecide,
} from './lib';

const BASELINE_ENV = 'SETT_REMOTE_CONFIG_BENCH_BASELINE';
const SECONDS = 8;

// Baseline role: serve the given body and headers for any request.
if (process.env[BASELINE_ENV]) {
  const { port, body, headers } = JSON.parse(process.env[BASELINE_ENV]!) as {
    port: number;
    body: string;
    headers: Record<string, string>;
  };
  const bytes = Buffer.from(body);
  http
    .createServer((_req, res) => {
      res.writeHead(200, { ...headers, 'Content-Length': bytes.length });
      res.end(bytes);
    })
    .listen(port, '127.0.0.1', () => process.stdout.write('baseline ready\n'));
}

async function prepare(serverUrl: string) {
  const name = `sett_bench_remote_config_${process.pid}`;
  const { url, drop } = await scratchDatabase(serverUrl, name);
  const pool = createPgPool({ databaseUrl: url, max: 2 });
  try {
    const { token, teamId } = await insertBenchProject(pool, {
      heatmaps_opt_in: true,
      autocapture_web_vitals_opt_in: true,
    });
    await pool.query(`INSERT INTO feature_flags (team_id, key, name, filters) VALUES ($1, 'f', 'f', '{}')`, [
      teamId,
    ]);
    return { url, drop, token };
  } finally {
    await pool.end();
  }
}

export async function run(): Promise<boolean> {
  const serverUrl = process.env.DATABASE_URL || 'postgresql://root@127.0.0.1:5432/sett';
  const db = await prepare(serverUrl);
  const baselinePort = await freePort();
  const decide = await startDecide(db.url);
  const decidePort = decide.port;
  let baseline: Awaited<ReturnType<typeof startChild>> | undefined;
  try {
    const subjectUrl = `http://127.0.0.1:${decidePort}/array/${db.token}/config`;
    const sample = await fetch(subjectUrl, { headers: { origin: 'https://site.example' } });
    const body = await sample.text();
    if (sample.status !== 200) throw new Error(`decide answered ${sample.status}: ${body}`);
    const headers: Record<string, string> = {};
    for (const name of [
      'content-type',
      'cache-control',
      'vary',
      'access-control-allow-origin',
      'access-control-allow-credentials',
    ]) {
      const value = sample.headers.get(name);
      if (value !== null) headers[name] = value;
    }
    process.stdout.write(`document: ${body.length} bytes\n`);
    baseline = await startChild(
      __filename,
      { [BASELINE_ENV]: JSON.stringify({ port: baselinePort, body, headers }) },
      /baseline ready/,
    );
    const baselineUrl = `http://127.0.0.1:${baselinePort}/array/${db.token}/config`;
    const opts = { method: 'GET' as const, headers: { origin: 'https://site.example' }, connections: 50 };
    await load({ ...opts, url: subjectUrl, durationSeconds: 2 });
    await load({ ...opts, url: baselineUrl, durationSeconds: 2 });
    const subject = await load({ ...opts, url: subjectUrl, durationSeconds: SECONDS });
    const base = await load({ ...opts, url: baselineUrl, durationSeconds: SECONDS });
    process.stdout.write(
      `remote config: ${fmt(subject.rps)} req/s, p50 ${subject.p50} ms, p99 ${subject.p99} ms, ` +
        `non-2xx ${subject.non2xx}, errors ${subject.errors}\n` +
        `baseline:      ${fmt(base.rps)} req/s, p50 ${base.p50} ms, p99 ${base.p99} ms\n` +
        `${ratioLine('throughput', subject.rps, base.rps, 'req/s')}\n`,
    );
    return subject.non2xx === 0 && subject.errors === 0;
  } finally {
    await baseline?.stop();
    await decide.stop();
    await db.drop();
  }
}
