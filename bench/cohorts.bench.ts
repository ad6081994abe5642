// `pnpm bench cohorts`: decide with cohort-targeted flags (issue 11). The decide benchmark's
// project and request mix (see decide.bench.ts), but its 50 flags are: 10 on cohorts (two static
// cohorts of 100,000 members each, property cohorts with nested AND/OR groups and negation, a
// cohort referring to another, `in` and `not_in`), 2 depending on other flags (a variant, a
// boolean) and 38 of the decide benchmark's own. Static members are inserted with SQL (a million
// would take as long through the API) and the Redis cohort list is written as management writes
// it. Against the same baseline as decide.bench.ts (express answering a fixed body of decide's
// size), in the same run. Every answer of both runs is checked: 50 flags, every cohort flag
// present, errorsWhileComputingFlags false (the baseline's fixed body passes, so both pay the
// same client cost).
// Target: decide's throughput >= 0.5 of the baseline's, no answer leaves out a cohort flag.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import autocannon from 'autocannon';
import { createRedis, redisKeys, writeCohortList } from '@sett/cache';
import {
  BASELINE_ENV,
  bodyMaker,
  flagDefinitions,
  prepareDatabase,
  seed,
  type BenchFlag,
} from './decide.bench';
import { fmt, forgetBenchProject, freePort, ratioLine, startChild, startDecide } from './lib';

const STATIC_MEMBERS = 100_000;
const SECONDS = 10;

interface CohortRow {
  id: number;
  name: string;
  filters: { properties?: unknown };
  is_static: boolean;
}

/** The cohorts, inserted as management stores them; returns them by role. */
async function seedCohorts(
  pool: { query: (sql: string, params?: unknown[]) => Promise<{ rows: unknown[] }> },
  teamId: number,
): Promise<Record<'staticA' | 'staticB' | 'paying' | 'seniorOrGb' | 'payingUsDe', CohortRow>> {
  const insert = async (name: string, filters: unknown, isStatic: boolean): Promise<CohortRow> => {
    const { rows } = await pool.query(
      `INSERT INTO cohorts (team_id, name, filters, is_static, count) VALUES ($1, $2, $3, $4, $5)
       RETURNING id, name, filters, is_static`,
      [teamId, name, JSON.stringify(filters), isStatic, isStatic ? STATIC_MEMBERS : null],
    );
    return rows[0] as CohortRow;
  };
  const staticA = await insert('static A', {}, true);
  const staticB = await insert('static B', {}, true);
  // Members: 1,000 of the 2,000 stored persons (so some requests match) and 99,000 others.
  // A: person-0..999; B: person-500..1499.
  for (const [cohort, from] of [
    [staticA, 0],
    [staticB, 500],
  ] as const) {
    await pool.query(
      `INSERT INTO cohort_members (cohort_id, team_id, distinct_id)
       SELECT $1::int, $2::int, CASE WHEN i < 1000 THEN 'person-' || ($3::int + i) ELSE 'member-' || $1::int || '-' || i END
         FROM generate_series(0, $4::int - 1) AS i`,
      [cohort.id, teamId, from, STATIC_MEMBERS],
    );
  }
  const paying = await insert(
    'paying, not example.com',
    {
      properties: {
        type: 'OR',
        values: [
          {
            type: 'AND',
            values: [
              { key: 'plan', type: 'person', operator: 'exact', value: ['pro', 'enterprise'] },
              { key: 'email', type: 'person', operator: 'icontains', value: '@example.com', negation: true },
            ],
          },
        ],
      },
    },
    false,
  );
  const seniorOrGb = await insert(
    'senior or GB',
    {
      properties: {
        type: 'OR',
        values: [
          { type: 'AND', values: [{ key: 'age', type: 'person', operator: 'gt', value: 50 }] },
          { type: 'AND', values: [{ key: 'country', type: 'person', operator: 'exact', value: ['GB'] }] },
        ],
      },
    },
    false,
  );
  const payingUsDe = await insert(
    'paying in US or DE',
    {
      properties: {
        type: 'AND',
        values: [
          {
            type: 'AND',
            values: [
              { key: 'id', type: 'cohort', value: paying.id },
              { key: 'country', type: 'person', operator: 'exact', value: ['US', 'DE'] },
            ],
          },
        ],
      },
    },
    false,
  );
  return { staticA, staticB, paying, seniorOrGb, payingUsDe };
}

const cohortProp = (id: number, operator?: 'in' | 'not_in') => ({
  key: 'id',
  type: 'cohort',
  value: id,
  ...(operator ? { operator } : {}),
});

/** 10 cohort flags, 2 dependent flags, and 38 of the decide benchmark's (the last 3 rollouts on). */
function cohortFlags(c: Awaited<ReturnType<typeof seedCohorts>>): {
  flags: BenchFlag[];
  cohortKeys: string[];
} {
  const cohort: BenchFlag[] = [
    {
      key: 'cohort-static-a',
      filters: { groups: [{ properties: [cohortProp(c.staticA.id)], rollout_percentage: 100 }] },
    },
    {
      key: 'cohort-static-b',
      filters: { groups: [{ properties: [cohortProp(c.staticB.id)], rollout_percentage: 50 }] },
    },
    {
      key: 'cohort-static-not-in',
      filters: { groups: [{ properties: [cohortProp(c.staticA.id, 'not_in')], rollout_percentage: 100 }] },
    },
    {
      key: 'cohort-static-or-senior',
      filters: {
        groups: [
          { properties: [cohortProp(c.staticB.id)], rollout_percentage: 100 },
          { properties: [cohortProp(c.seniorOrGb.id)], rollout_percentage: 40 },
        ],
      },
    },
    {
      key: 'cohort-paying',
      filters: { groups: [{ properties: [cohortProp(c.paying.id)], rollout_percentage: 100 }] },
    },
    {
      key: 'cohort-not-paying',
      filters: { groups: [{ properties: [cohortProp(c.paying.id, 'not_in')], rollout_percentage: 100 }] },
    },
    {
      key: 'cohort-senior-gb',
      filters: { groups: [{ properties: [cohortProp(c.seniorOrGb.id)], rollout_percentage: 100 }] },
    },
    {
      key: 'cohort-paying-us-de',
      filters: { groups: [{ properties: [cohortProp(c.payingUsDe.id)], rollout_percentage: 70 }] },
    },
    {
      key: 'cohort-and-plan',
      filters: {
        groups: [
          {
            properties: [
              cohortProp(c.seniorOrGb.id),
              { key: 'plan', type: 'person', operator: 'exact', value: ['free'] },
            ],
            rollout_percentage: 100,
          },
        ],
      },
    },
    {
      key: 'cohort-multivariate',
      filters: {
        groups: [{ properties: [cohortProp(c.payingUsDe.id)], rollout_percentage: 100 }],
        multivariate: {
          variants: [
            { key: 'control', rollout_percentage: 50 },
            { key: 'test', rollout_percentage: 50 },
          ],
        },
      },
    },
  ];
  const dependent: BenchFlag[] = [
    {
      key: 'depends-on-variant',
      filters: (ids: Map<string, number>) => ({
        groups: [
          {
            properties: [
              {
                key: String(ids.get('experiment-0')),
                type: 'flag',
                operator: 'flag_evaluates_to',
                value: 'test-a',
              },
            ],
            rollout_percentage: 100,
          },
        ],
      }),
    },
    {
      key: 'depends-on-boolean',
      filters: (ids: Map<string, number>) => ({
        groups: [
          {
            properties: [
              {
                key: String(ids.get('cohort-paying')),
                type: 'flag',
                operator: 'flag_evaluates_to',
                value: true,
              },
            ],
            rollout_percentage: 100,
          },
        ],
      }),
    },
  ];
  const rest = flagDefinitions().slice(12); // drops rollout-0..11
  return { flags: [...rest, ...cohort, ...dependent], cohortKeys: cohort.map((f) => f.key) };
}

interface Checked {
  requests: number;
  rps: number;
  p50: number;
  p99: number;
  non2xx: number;
  errors: number;
  /** Answers that were not 50 flags with every cohort flag and errorsWhileComputingFlags false. */
  bad: number;
  firstBad?: string;
  /** How often each cohort flag was enabled. */
  enabled: Map<string, number>;
}

/** An autocannon run whose every answer is parsed and checked. */
async function checkedLoad(
  url: string,
  body: () => string,
  cohortKeys: string[],
  seconds: number,
): Promise<Checked> {
  const enabled = new Map(cohortKeys.map((k) => [k, 0]));
  const prefixes = cohortKeys.map(
    (k) => [k, `${JSON.stringify(k)}:{"key":${JSON.stringify(k)},"enabled":`] as const,
  );
  let bad = 0;
  let firstBad: string | undefined;
  const result = await autocannon({
    url,
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    connections: 50,
    duration: seconds,
    timeout: 10,
    requests: [
      {
        setupRequest: (req) => ({ ...req, body: body() }),
        onResponse: (status: number, text: string) => {
          // String checks on decide's v4 serialisation (`"<key>":{"key":"<key>","enabled":…`):
          // JSON.parse of every 12 kB answer would make the client the bottleneck of both runs.
          let ok = status === 200 && text.includes('"errorsWhileComputingFlags":false');
          let flags = 0;
          for (let i = text.indexOf(',"enabled":'); i !== -1; i = text.indexOf(',"enabled":', i + 1)) flags++;
          if (flags !== 50) ok = false;
          for (const [key, prefix] of prefixes) {
            const at = text.indexOf(prefix);
            if (at === -1) ok = false;
            else if (text.startsWith('true', at + prefix.length)) enabled.set(key, enabled.get(key)! + 1);
          }
          if (!ok) {
            bad++;
            firstBad ??= `${status} ${text.slice(0, 500)}`;
          }
        },
      },
    ],
  });
  return {
    requests: result.requests.total,
    rps: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    non2xx: result.non2xx,
    errors: result.errors,
    bad,
    firstBad,
    enabled,
  };
}

function line(label: string, r: Checked): string {
  return (
    `${label}: ${fmt(r.rps)} req/s, p50 ${r.p50} ms, p99 ${r.p99} ms ` +
    `(${r.requests} requests, non-2xx ${r.non2xx}, errors ${r.errors}, answers failing the check ${r.bad})`
  );
}

export async function run(): Promise<boolean> {
  const serverUrl = process.env.DATABASE_URL || 'postgresql://root@127.0.0.1:5432/sett';
  const redisUrl = process.env.REDIS_URL || 'redis://127.0.0.1:6379';
  const db = await prepareDatabase(serverUrl);
  let cohortKeys: string[] = [];
  let cohorts: CohortRow[] = [];
  const started = Date.now();
  const project = await seed(db.url, async (pool, teamId) => {
    const c = await seedCohorts(pool, teamId);
    cohorts = Object.values(c);
    const made = cohortFlags(c);
    cohortKeys = made.cohortKeys;
    return made.flags;
  }).catch(async (err: unknown) => {
    await db.drop();
    throw err;
  });
  const redis = createRedis({ url: redisUrl });
  let decide: Awaited<ReturnType<typeof startDecide>> | undefined;
  let baseline: Awaited<ReturnType<typeof startChild>> | undefined;
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'sett-bench-cohorts-'));
  try {
    // As management writes it on every cohort write (static cohorts without their members).
    await writeCohortList(redis, {
      teamId: project.teamId,
      updatedAt: Date.now(),
      cohorts: cohorts.map((c) => ({
        id: c.id,
        name: c.name,
        filters: c.filters,
        is_static: c.is_static,
        version: 1,
      })),
    });
    process.stdout.write(
      `seeded in ${((Date.now() - started) / 1000).toFixed(1)} s: 50 flags (10 on cohorts, 2 dependent), ` +
        `2 static cohorts of ${STATIC_MEMBERS.toLocaleString('en-US')} members, 3 property cohorts (team ${project.teamId})\n`,
    );
    const baselinePort = await freePort();
    decide = await startDecide(db.url);
    const decidePort = decide.port;
    const body = bodyMaker(project.token);
    const decideUrl = `http://127.0.0.1:${decidePort}/decide/?v=4`;
    // Sized like decide's answer for a stored person (a static member: cohort flags on).
    const sample = await fetch(decideUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ api_key: project.token, distinct_id: 'person-700' }),
    });
    const sampleText = await sample.text();
    if (sample.status !== 200) throw new Error(`decide answered ${sample.status}: ${sampleText}`);
    const sampleAnswer = JSON.parse(sampleText) as { flags: Record<string, { enabled: boolean }> };
    process.stdout.write(
      `response size: ${sampleText.length} bytes, ${Object.keys(sampleAnswer.flags).length} flags; person-700 ` +
        `(in both static cohorts): cohort-static-a=${sampleAnswer.flags['cohort-static-a']?.enabled}, ` +
        `cohort-static-not-in=${sampleAnswer.flags['cohort-static-not-in']?.enabled}\n`,
    );
    const responseFile = path.join(tmp, 'response.json');
    fs.writeFileSync(responseFile, sampleText);
    baseline = await startChild(
      path.join(__dirname, 'decide.bench.ts'),
      { [BASELINE_ENV]: JSON.stringify({ port: baselinePort, responseFile }) },
      /baseline ready/,
    );
    const baselineUrl = `http://127.0.0.1:${baselinePort}/decide/`;

    await checkedLoad(decideUrl, body, cohortKeys, 2);
    await checkedLoad(baselineUrl, body, cohortKeys, 2);
    const d = await checkedLoad(decideUrl, body, cohortKeys, SECONDS);
    const b = await checkedLoad(baselineUrl, body, cohortKeys, SECONDS);
    process.stdout.write(`${line('decide   (max)', d)}\n${line('baseline (max)', b)}\n`);
    if (d.firstBad) process.stdout.write(`first failing decide answer: ${d.firstBad}\n`);
    process.stdout.write(`${ratioLine('throughput', d.rps, b.rps, 'req/s')}\n`);
    process.stdout.write(`${ratioLine('p50 at max load', d.p50, b.p50, 'ms')}\n`);
    process.stdout.write(
      `cohort flags enabled (of ${d.requests} answers): ${[...d.enabled].map(([k, n]) => `${k} ${n}`).join(', ')}\n`,
    );
    // ~25% of requests are stored persons, half of whom are static members: both flags must be seen on.
    const membersSeen = d.enabled.get('cohort-static-a')! > 0 && d.enabled.get('cohort-static-b')! > 0;
    const ratio = d.rps / b.rps;
    const checks: Array<[string, boolean]> = [
      [`ratio to baseline >= 0.5 (${ratio.toFixed(2)})`, ratio >= 0.5],
      [
        `every answer has 50 flags, every cohort flag, no errorsWhileComputingFlags (${d.bad} failed)`,
        d.bad === 0,
      ],
      ['no errors or non-2xx', d.non2xx + d.errors === 0],
      ['static cohort members matched (both static flags seen enabled)', membersSeen],
    ];
    for (const [name, ok] of checks) process.stdout.write(`${ok ? 'PASS' : 'MISS'} ${name}\n`);
    process.stdout.write(`total ${((Date.now() - started) / 1000).toFixed(1)} s\n`);
    return checks.every(([, ok]) => ok);
  } finally {
    await baseline?.stop();
    await decide?.stop();
    fs.rmSync(tmp, { recursive: true, force: true });
    redis.disconnect();
    await forgetBenchProject(redisUrl, project, [redisKeys.cohorts(project.teamId)]);
    await db.drop();
  }
}
