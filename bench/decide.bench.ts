// `pnpm bench decide`: what decide's own work costs, measured against two servers that differ
// from it in one thing each, all child processes of the same kind, taking turns in short slices:
// - **bare**: the same decide (services/decide/src/compose.ts: the same answerer, clients and
//   caches) behind a bare node:http server instead of the route mechanism: decide / bare is what
//   the mechanism (routing, CORS, request id, metrics, access line, error answers) costs;
// - **fixed**: the route mechanism answering a fixed document of the size of decide's answer
//   after parsing the same body: decide / fixed is what flag evaluation costs.
// The requests carry every property the 50 flags read (person properties, and group properties
// for the group they name), each with a fresh distinct id, so no request needs Postgres (checked
// on decide's property-lookup counter). Targets: decide >= 0.9 of bare; >= 0.5 of fixed; p99 at
// 1,000 requests/s <= 1.4x fixed's. The older mix (a quarter stored persons, a quarter unknown
// ids looked up in Postgres, half with a stored group) is printed for information: its ratio
// moves with Postgres, not with anything decide does per request.
// A project with 50 flags (rollouts, multivariate, person-property and group conditions).
// decide runs as one process unless DECIDE_WORKERS is set in the environment (passed through).
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { loadConfig } from '@sett/config';
import {
  createMetricsRegistry,
  createRouteApp,
  readBody,
  route,
  SerializedJson,
  serverTimeouts,
  startService,
  ValidationError,
} from '@sett/http';
import { createLogger } from '@sett/logger';
import { createPgPool } from '@sett/db';
import { composeDecide } from '../services/decide/src/compose';
import {
  combineTurns,
  fmt,
  forgetBenchProject,
  freePort,
  insertBenchProject,
  load,
  ratioLine,
  scratchDatabase,
  startChild,
  type LoadResult,
  startDecide,
} from './lib';

export const BASELINE_ENV = 'SETT_DECIDE_BENCH_BASELINE';
const BARE_ENV = 'SETT_DECIDE_BENCH_BARE';
const PERSONS = 2_000;
const GROUPS = 200;
const MAX_SECONDS = 8;
/** Turns each server takes at each load (MAX_SECONDS split among them). */
const SLICES = 4;

// Baseline role: when this file is started as a child with the env var set, it serves the
// fixed response and nothing else.
if (process.env[BASELINE_ENV]) {
  const { port, responseFile } = JSON.parse(process.env[BASELINE_ENV]!) as {
    port: number;
    responseFile: string;
  };
  const fixed = fs.readFileSync(responseFile, 'utf8');
  const config = loadConfig(process.env);
  const logger = createLogger({ level: 'info', format: 'json', service: 'baseline' });
  const r = route<Record<string, never>>();
  const app = createRouteApp({
    name: 'baseline',
    logger,
    registry: createMetricsRegistry('baseline'),
    readiness: {},
    deps: {},
    accessLogSampleRate: config.http.accessLogSampleRate,
    table: {
      service: 'decide',
      routes: [
        r({
          method: 'POST',
          url: '/decide/',
          summary: 'parse the body, answer a fixed document',
          tag: 'bench',
          auth: { kind: 'none' },
          body: 'raw',
          // Served the way decide's evaluation routes are (routes.ts).
          rawFastPath: true,
          schema: { querystring: { type: 'object', additionalProperties: true } },
          handler: async ({ request }) => {
            const body = JSON.parse((await readBody(request.raw, 1024 * 1024)).toString('utf8')) as {
              distinct_id?: unknown;
            };
            if (!body?.distinct_id) throw new ValidationError('distinct_id is required', 'distinct_id');
            return new SerializedJson(fixed);
          },
        }),
      ],
    },
  });
  void startService({
    name: 'baseline',
    app,
    host: '127.0.0.1',
    port,
    timeouts: serverTimeouts(config),
    logger,
    handleSignals: true,
  }).then(() => process.stdout.write(`baseline ready on ${port}\n`));
}

// Bare role: decide's answerer (the same composition as services/decide/src/main.ts) behind
// node:http with nothing else: no CORS, request id, metrics, access line or error mapping.
if (process.env[BARE_ENV]) void serveBare(Number(process.env[BARE_ENV]));

async function serveBare(port: number): Promise<void> {
  const config = loadConfig(process.env);
  const logger = createLogger({ level: 'warn', format: 'json', service: 'decide-bare' });
  const { decide } = await composeDecide(config, logger);
  const timeouts = serverTimeouts(config);
  const server = http.createServer(
    {
      headersTimeout: timeouts.headersMs,
      requestTimeout: timeouts.requestMs,
      keepAliveTimeout: timeouts.keepAliveMs,
    },
    (req, res) => {
      const url = req.url ?? '/';
      const q = url.indexOf('?');
      const pathname = q === -1 ? url : url.slice(0, q);
      const endpoint = pathname === '/flags/' ? 'flags' : pathname === '/decide/' ? 'decide' : undefined;
      if (req.method !== 'POST' || !endpoint) {
        res.writeHead(404).end();
        return;
      }
      const query = new URLSearchParams(q === -1 ? '' : url.slice(q + 1));
      readBody(req, config.decide.maxBodyBytes)
        .then((body) =>
          decide.answer(endpoint, {
            version: query.get('v') ?? undefined,
            compression: query.get('compression') ?? undefined,
            config: query.get('config') ?? undefined,
            body,
            headers: req.headers,
            remoteAddress: req.socket.remoteAddress,
          }),
        )
        .then(
          (json) => {
            res.writeHead(200, {
              'content-type': 'application/json',
              'content-length': Buffer.byteLength(json),
            });
            res.end(json);
          },
          (err: Error) => {
            res.writeHead(500, { 'content-type': 'application/json' });
            res.end(JSON.stringify({ error: err.message }));
          },
        );
    },
  );
  // Exits on SIGTERM through process.exit, so that 'exit' hooks (a CPU profile) run.
  process.once('SIGTERM', () => process.exit(0));
  server.listen(port, '127.0.0.1', () => process.stdout.write(`bare decide ready on ${port}\n`));
}

const PLANS = ['free', 'pro', 'enterprise'];
const COUNTRIES = ['GB', 'US', 'DE', 'FR', 'AU'];

export function personProperties(i: number): Record<string, unknown> {
  return {
    email: `user${i}@${i % 3 === 0 ? 'example.com' : 'mail.org'}`,
    plan: PLANS[i % PLANS.length],
    age: 18 + (i % 50),
    country: COUNTRIES[i % COUNTRIES.length],
    signup: `2024-0${1 + (i % 9)}-15T00:00:00Z`,
  };
}

export interface BenchFlag {
  key: string;
  /** The filters, or a function of the ids of the flags inserted before it (flag dependencies). */
  filters: unknown;
  continuity?: boolean;
}

/** 50 flags: 15 rollouts, 10 multivariate, 15 person-property conditions, 5 group, 5 mixed with payloads. */
export function flagDefinitions(): BenchFlag[] {
  const flags: BenchFlag[] = [];
  for (let i = 0; i < 15; i++)
    flags.push({
      key: `rollout-${i}`,
      filters: { groups: [{ properties: [], rollout_percentage: (i * 7) % 101 }] },
    });
  for (let i = 0; i < 10; i++) {
    flags.push({
      key: `experiment-${i}`,
      filters: {
        groups: [{ properties: [], rollout_percentage: 50 + i * 5 }],
        multivariate: {
          variants: [
            { key: 'control', rollout_percentage: 34 },
            { key: 'test-a', rollout_percentage: 33 },
            { key: 'test-b', rollout_percentage: 33 },
          ],
        },
      },
    });
  }
  const personConditions = [
    { key: 'email', type: 'person', operator: 'icontains', value: '@example.com' },
    { key: 'plan', type: 'person', operator: 'exact', value: ['pro', 'enterprise'] },
    { key: 'age', type: 'person', operator: 'gt', value: 40 },
    { key: 'country', type: 'person', operator: 'exact', value: 'GB' },
    { key: 'email', type: 'person', operator: 'regex', value: '^user[0-9]*5@' },
    { key: 'signup', type: 'person', operator: 'is_date_after', value: '2024-05-01' },
    { key: 'plan', type: 'person', operator: 'is_not', value: 'free' },
  ];
  for (let i = 0; i < 15; i++) {
    flags.push({
      key: `targeted-${i}`,
      filters: {
        groups: [
          { properties: [personConditions[i % personConditions.length]], rollout_percentage: 100 - i * 3 },
          { properties: [], rollout_percentage: 5 },
        ],
      },
    });
  }
  for (let i = 0; i < 5; i++) {
    flags.push({
      key: `company-${i}`,
      filters: {
        aggregation_group_type_index: 0,
        groups: [
          {
            properties: [{ key: 'plan', type: 'group', group_type_index: 0, value: PLANS[i % PLANS.length] }],
            rollout_percentage: 100,
          },
          { properties: [], rollout_percentage: 20 },
        ],
      },
    });
  }
  for (let i = 0; i < 5; i++) {
    flags.push({
      key: `banner-${i}`,
      filters: {
        groups: [
          {
            properties: [
              { key: 'country', type: 'person', operator: 'exact', value: COUNTRIES.slice(0, 2 + i) },
            ],
            rollout_percentage: 80,
            variant: i % 2 ? 'blue' : null,
          },
          { properties: [], rollout_percentage: 30 },
        ],
        multivariate: {
          variants: [
            { key: 'blue', rollout_percentage: 50 },
            { key: 'green', rollout_percentage: 50 },
          ],
        },
        payloads: {
          blue: JSON.stringify({ color: 'blue', n: i }),
          green: JSON.stringify({ color: 'green', n: i }),
        },
      },
    });
  }
  return flags;
}

export function prepareDatabase(serverUrl: string): Promise<{ url: string; drop: () => Promise<void> }> {
  return scratchDatabase(serverUrl, `sett_bench_decide_${process.pid}`);
}

/**
 * The bench project: `flags(pool, teamId)` gives its flags (default: flagDefinitions()), inserted
 * in order; a flag whose `filters` is a function gets the ids of the flags inserted before it.
 */
export async function seed(
  databaseUrl: string,
  flags: (pool: ReturnType<typeof createPgPool>, teamId: number) => Promise<BenchFlag[]> = async () =>
    flagDefinitions(),
): Promise<{ token: string; teamId: number; organizationId: string }> {
  const pool = createPgPool({ databaseUrl, max: 2 });
  try {
    const { organizationId, token, teamId } = await insertBenchProject(pool);
    const ids = new Map<string, number>();
    for (const f of await flags(pool, teamId)) {
      const filters =
        typeof f.filters === 'function'
          ? (f.filters as (ids: Map<string, number>) => unknown)(ids)
          : f.filters;
      const { rows: inserted } = await pool.query<{ id: number }>(
        'INSERT INTO feature_flags (team_id, key, name, filters) VALUES ($1, $2, $3, $4) RETURNING id',
        [teamId, f.key, f.key, JSON.stringify(filters)],
      );
      ids.set(f.key, inserted[0]!.id);
    }
    await pool.query(
      `INSERT INTO group_type_mappings (team_id, group_type, group_type_index) VALUES ($1, 'company', 0)`,
      [teamId],
    );
    await pool.query(
      `INSERT INTO groups (team_id, group_type_index, group_key, group_properties)
       SELECT $1, 0, 'company-' || i, jsonb_build_object('plan', (ARRAY['free','pro','enterprise'])[1 + i % 3])
         FROM generate_series(0, $2 - 1) AS i`,
      [teamId, GROUPS],
    );
    const props = Array.from({ length: PERSONS }, (_, i) => JSON.stringify(personProperties(i)));
    const { rows: persons } = await pool.query<{ id: string }>(
      'INSERT INTO persons (uuid, team_id, properties) SELECT gen_random_uuid(), $1, p::jsonb FROM unnest($2::text[]) AS p RETURNING id::text',
      [teamId, props],
    );
    await pool.query(
      `INSERT INTO person_distinct_ids (team_id, distinct_id, person_id)
       SELECT $1, 'person-' || (n - 1), pid::bigint FROM unnest($2::text[]) WITH ORDINALITY AS t(pid, n)`,
      [teamId, persons.map((p) => p.id)],
    );
    return { token, teamId, organizationId };
  } finally {
    await pool.end();
  }
}

export function bodyMaker(token: string): () => string {
  return () => {
    const r = Math.random();
    const body: Record<string, unknown> = { api_key: token, distinct_id: `anon-${randomUUID()}` };
    if (r < 0.5) {
      // a random id carrying every person property the flags read: no stored person needed
      body.person_properties = personProperties(Math.floor(Math.random() * 100_000));
    } else if (r < 0.75) {
      // an identified person: stored properties read (and cached briefly)
      body.distinct_id = `person-${Math.floor(Math.random() * PERSONS)}`;
    }
    // else a random id without properties: a stored-person lookup that finds nobody
    if (Math.random() < 0.5) body.groups = { company: `company-${Math.floor(Math.random() * GROUPS)}` };
    return JSON.stringify(body);
  };
}

/** Requests that carry every property the flags read: a fresh id, its person properties, and
 * the properties of the group it names. Decide needs no stored person or group for them. */
export function fullBodyMaker(token: string): () => string {
  return () => {
    const company = Math.floor(Math.random() * GROUPS);
    return JSON.stringify({
      api_key: token,
      distinct_id: `anon-${randomUUID()}`,
      person_properties: personProperties(Math.floor(Math.random() * 100_000)),
      groups: { company: `company-${company}` },
      group_properties: { company: { plan: PLANS[company % PLANS.length] } },
    });
  };
}

function line(label: string, r: LoadResult): string {
  return `${label}: ${fmt(r.rps)} req/s, p50 ${r.p50} ms, p99 ${r.p99} ms (${r.requests} requests, non-2xx ${r.non2xx}, errors ${r.errors})`;
}

/** Sum of decide's stored-property reads so far (decide_property_lookups_total, every kind). */
async function propertyLookups(port: number): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
  let sum = 0;
  for (const l of text.split('\n'))
    if (/^\w*decide_property_lookups_total\{/.test(l)) sum += Number(l.split(' ').pop());
  return sum;
}

export async function run(): Promise<boolean> {
  const serverUrl = process.env.DATABASE_URL || 'postgresql://root@127.0.0.1:5432/sett';
  const redisUrl = process.env.REDIS_URL || 'redis://127.0.0.1:6379';
  const db = await prepareDatabase(serverUrl);
  const project = await seed(db.url);
  process.stdout.write(`seeded: 50 flags, ${PERSONS} persons, ${GROUPS} groups (team ${project.teamId})\n`);
  process.stdout.write(
    `requests: a fresh id with every person property the flags read and its group's properties ` +
      `(no Postgres); DECIDE_WORKERS=${process.env.DECIDE_WORKERS ?? '1'}\n`,
  );
  const decide = await startDecide(db.url);
  const full = fullBodyMaker(project.token);
  const decideUrl = `http://127.0.0.1:${decide.port}/flags/?v=2`;
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'sett-bench-decide-'));
  let baseline: Awaited<ReturnType<typeof startChild>> | undefined;
  let bare: Awaited<ReturnType<typeof startChild>> | undefined;
  try {
    // A real answer, to size the baseline's fixed response like decide's.
    const sample = await fetch(decideUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: full(),
    });
    const sampleText = await sample.text();
    if (sample.status !== 200) throw new Error(`decide answered ${sample.status}: ${sampleText}`);
    const responseFile = path.join(tmp, 'response.json');
    fs.writeFileSync(responseFile, sampleText);
    process.stdout.write(
      `response size: ${sampleText.length} bytes, ${Object.keys(JSON.parse(sampleText).flags).length} flags\n`,
    );
    const baselinePort = await freePort();
    baseline = await startChild(
      __filename,
      { [BASELINE_ENV]: JSON.stringify({ port: baselinePort, responseFile }) },
      /baseline ready/,
    );
    const barePort = await freePort();
    bare = await startChild(
      __filename,
      {
        [BARE_ENV]: String(barePort),
        DATABASE_URL: db.url,
        REDIS_URL: redisUrl,
        NODE_ENV: 'production',
      },
      /bare decide ready/,
    );
    const servers = [
      { name: 'decide', url: decideUrl },
      { name: 'bare', url: `http://127.0.0.1:${barePort}/flags/?v=2` },
      { name: 'fixed', url: `http://127.0.0.1:${baselinePort}/decide/` },
    ];

    // Warm all three (JIT, caches, connection pools), then measure. They take turns in short
    // slices rather than one long run each: on a shared machine, load from elsewhere then falls
    // on all alike instead of on whichever ran while it lasted.
    for (const s of servers) await load({ url: s.url, body: full, connections: 20, durationSeconds: 2 });
    const lookupsBefore = await propertyLookups(decide.port);
    const sliceSeconds = MAX_SECONDS / SLICES;
    const max = servers.map(() => [] as LoadResult[]);
    for (let i = 0; i < SLICES; i++)
      for (const [k, s] of servers.entries())
        max[k]!.push(await load({ url: s.url, body: full, connections: 50, durationSeconds: sliceSeconds }));
    const fixedRate = servers.map(() => [] as LoadResult[]);
    for (let i = 0; i < SLICES; i++)
      for (const [k, s] of servers.entries())
        fixedRate[k]!.push(
          await load({
            url: s.url,
            body: full,
            connections: 20,
            durationSeconds: sliceSeconds,
            overallRate: 1000,
          }),
        );
    const lookups = (await propertyLookups(decide.port)) - lookupsBefore;
    // The older mix, for information: half the requests need Postgres.
    const mixed = await load({
      url: decideUrl,
      body: bodyMaker(project.token),
      connections: 50,
      durationSeconds: 4,
    });

    const maxAll = max.map(combineTurns);
    const rateAll = fixedRate.map(combineTurns);
    const [decideMax, bareMax, fixedMax] = [maxAll[0]!, maxAll[1]!, maxAll[2]!];
    const [decideRate, fixedRateAll] = [rateAll[0]!, rateAll[2]!];
    for (const [k, s] of servers.entries())
      process.stdout.write(`${line(`${s.name.padEnd(6)} (max)`, maxAll[k]!)}\n`);
    for (const [k, s] of servers.entries())
      process.stdout.write(`${line(`${s.name.padEnd(6)} (1,000 req/s)`, rateAll[k]!)}\n`);
    process.stdout.write(`${line('decide, older mix (half need Postgres; information)', mixed)}\n`);
    process.stdout.write(`stored-property reads by decide during the measured runs: ${lookups}\n`);
    process.stdout.write(
      `${ratioLine('route mechanism: decide vs bare', decideMax.rps, bareMax.rps, 'req/s')}\n`,
    );
    process.stdout.write(
      `${ratioLine('evaluation: decide vs fixed', decideMax.rps, fixedMax.rps, 'req/s')}\n`,
    );
    process.stdout.write(
      `${ratioLine('p99 at 1,000 req/s: decide vs fixed', decideRate.p99, fixedRateAll.p99, 'ms')}\n`,
    );

    const mechanism = decideMax.rps / bareMax.rps;
    const evaluation = decideMax.rps / fixedMax.rps;
    const p99Ratio = decideRate.p99 / fixedRateAll.p99;
    const all = [...maxAll, ...rateAll];
    const checks: Array<[string, boolean]> = [
      [`route mechanism costs <= 10%: decide >= 0.9 of bare (${mechanism.toFixed(2)})`, mechanism >= 0.9],
      [`decide >= 0.5 of the fixed response (${evaluation.toFixed(2)})`, evaluation >= 0.5],
      [`p99 at 1,000 req/s <= 1.4x fixed's (${p99Ratio.toFixed(2)}x)`, p99Ratio <= 1.4],
      ['no stored-property reads (every property in the request)', lookups === 0],
      [
        'no errors or non-2xx',
        all.every((r) => r.non2xx + r.errors === 0) && mixed.non2xx + mixed.errors === 0,
      ],
    ];
    for (const [name, ok] of checks) process.stdout.write(`${ok ? 'PASS' : 'MISS'} ${name}\n`);
    return checks.every(([, ok]) => ok);
  } finally {
    await baseline?.stop();
    await bare?.stop();
    await decide.stop();
    fs.rmSync(tmp, { recursive: true, force: true });
    await forgetBenchProject(redisUrl, project);
    await db.drop();
  }
}
