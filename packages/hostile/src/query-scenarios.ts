// Abuse scenarios of the query API (POST /query/, and the events list that shares its filters):
// cheap, valid requests that used to stall management for every tenant, and answers that were
// wrong or misleading. Each reproduces a finding of the query-safety review and states what
// must hold instead:
// 1. an hourly compare over 3,691 buckets was quadratic on the event loop;
// 2. regex filters compiled synchronously with no budget per request;
// 3. heavy queries of one owner took every connection management had (key checks and /_ready
//    included), so another organization got 503;
// 4. a breakdown answer had no size bound (32 MB for one series);
// 5. one stored value ("1" and 400 zeros, 2024-02-30) broke a property's filters for good;
// 6. gt/lt with a value that is no number generated invalid SQL (500);
// 7. a date filter with a value that is no date answered 503 with Retry-After;
// 8. RE2 patterns Postgres cannot run said "out of range", an overlong path parameter said
//    "malformed percent-encoding", HEAD /decide/ said GET was not allowed;
// 9. date ranges: -2090y compared as text, years 0000-0099 refused or shifted 1,900 years,
//    9999-12-01 by day "more than 3,700 intervals";
// 10. management echoed any Origin, even on /_metrics and /api/schema/.
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import type { Scenario, ScenarioContext } from './scenarios';
import { bearer, check, json, meanwhile, parse, send, type Answer } from './scenario-kit';

const MB = 1024 * 1024;

function trends(
  ctx: ScenarioContext,
  key: string,
  projectId: number,
  query: Record<string, unknown>,
  from?: string,
) {
  return send(ctx.urls.management, {
    method: 'POST',
    path: `/api/projects/${projectId}/query/`,
    headers: { ...json, ...bearer(key) },
    // Computed every time: these scenarios are about running queries, not the result cache.
    body: JSON.stringify({ query: { kind: 'TrendsQuery', ...query }, refresh: 'force_blocking' }),
    from,
  });
}

const series = (extra: Record<string, unknown> = {}) => [
  { kind: 'EventsNode', event: '$pageview', ...extra },
];

/** Polls `path` on management until `until` resolves, returning every latency and status seen. */
function watch(ctx: ScenarioContext, path: string, until: Promise<unknown>, key?: string) {
  return meanwhile(until, () =>
    send(ctx.urls.management, { path, headers: key ? bearer(key) : {}, from: '127.0.0.40' }),
  );
}

const worst = (answers: Answer[]) => Math.max(...answers.map((a) => a.ms));

const compareBuckets: Scenario = {
  name: 'query management: four hourly compares over 3,691 buckets answer in time, and /_health meanwhile',
  cls: 'query',
  async run(ctx) {
    // Two from each of two organizations (each user's cap).
    const callers: Array<[string, number]> = [
      [ctx.otherPersonalKey, ctx.otherProjectId],
      [ctx.otherPersonalKey, ctx.otherProjectId],
      [ctx.thirdPersonalKey, ctx.thirdProjectId],
      [ctx.thirdPersonalKey, ctx.thirdProjectId],
    ];
    const heavy = Promise.all(
      callers.map(([key, project]) =>
        trends(ctx, key, project, {
          series: series({ event: `no-such-event-${randomUUID()}` }),
          interval: 'hour',
          dateRange: { date_from: '-3690h' },
          compareFilter: { compare: true },
        }),
      ),
    );
    const health = await watch(ctx, '/_health', heavy);
    const answers = await heavy;
    check(
      answers.every((a) => a.status === 200),
      `compares got ${answers.map((a) => `${a.status} ${a.body.slice(0, 120)}`)}`,
    );
    const results = (parse(answers[0]!).results as { data: number[] }[]) ?? [];
    check(
      results.length === 2 && results[1]!.data.length === 3691,
      `the answer holds ${results.map((r) => r.data.length)} buckets`,
    );
    // Before: each compare took 3.3 s on the event loop and /_health waited 3 s behind them.
    check(worst(answers) < 2000, `the slowest compare took ${worst(answers).toFixed(0)} ms`);
    check(worst(health) < 500, `/_health took up to ${worst(health).toFixed(0)} ms meanwhile`);
  },
};

/** A pattern of case-folded Unicode classes: few characters, long to compile (about 1.6 ms a class). */
const foldedPattern = (tag: string, classes: number) => `(?i)${tag}${'[Ā-￿]'.repeat(classes)}`;

const regexBudget: Scenario = {
  name: 'query management: a body of 240 costly 4 KB patterns, and one of 8 patterns each within its limit, are refused at once',
  cls: 'query',
  async run(ctx) {
    const tag = randomUUID().slice(0, 8);
    const big = Array.from({ length: 240 }, (_, i) => foldedPattern(`${tag}${i}`, 800));
    const refusedBig = trends(ctx, ctx.otherPersonalKey, ctx.otherProjectId, {
      series: series(),
      properties: big.map((value) => ({ key: 'email', value, operator: 'regex' })).slice(0, 50),
    });
    // Each within the limit of one pattern (7 classes), but not together: the per-request budget.
    const eight = Array.from({ length: 8 }, (_, i) => foldedPattern(`${tag}b${i}`, 7));
    const filters = encodeURIComponent(
      JSON.stringify(eight.map((value) => ({ key: 'email', value, operator: 'regex' }))),
    );
    const refusedList = send(ctx.urls.management, {
      path: `/api/projects/${ctx.otherProjectId}/events/?properties=${filters}`,
      headers: bearer(ctx.otherPersonalKey),
    });
    const both = Promise.all([refusedBig, refusedList]);
    const health = await watch(ctx, '/_health', both);
    const [query, list] = await both;
    check(
      query.status === 400 && query.body.includes('regex is too large'),
      `the 4 KB patterns got ${query.status} ${query.body.slice(0, 200)}`,
    );
    check(
      list.status === 400 && list.body.includes('too long to compile together'),
      `8 patterns over the budget got ${list.status} ${list.body.slice(0, 200)}`,
    );
    check(
      query.ms < 1000 && list.ms < 1000,
      `refusals took ${query.ms.toFixed(0)} and ${list.ms.toFixed(0)} ms`,
    );
    check(worst(health) < 250, `/_health took up to ${worst(health).toFixed(0)} ms meanwhile`);
    // One of them alone is accepted: it compiles off the event loop.
    const one = await send(ctx.urls.management, {
      path: `/api/projects/${ctx.otherProjectId}/events/?properties=${encodeURIComponent(JSON.stringify([{ key: 'email', value: eight[0], operator: 'regex' }]))}`,
      headers: bearer(ctx.otherPersonalKey),
    });
    check(one.status === 200, `one pattern within the budget got ${one.status} ${one.body.slice(0, 200)}`);
  },
};

/** Writes `n` pageviews with twenty string properties into a project, over the last 30 days. */
async function fillProject(db: pg.Pool, projectId: number, n: number): Promise<void> {
  await db.query(
    `INSERT INTO events (uuid, team_id, event, distinct_id, timestamp, properties)
     SELECT gen_random_uuid(), $1, '$pageview', 'user-' || (i % 5000),
            now() - (i % 43200) * interval '1 minute',
            jsonb_build_object('email', 'user-' || (i % 5000) || '@example.com', '$current_url',
              'https://example.com/' || repeat('path/', 20) || i, 'plan', CASE WHEN i % 3 = 0 THEN 'pro' ELSE 'free' END)
       FROM generate_series(1, $2) AS i`,
    [projectId, n],
  );
}

/** A query that scans a project's month of events with 20 regexes on each of 3 series. */
const heavyQuery = (tag: string) => ({
  series: [0, 1, 2].map((s) => ({
    kind: 'EventsNode',
    event: '$pageview',
    properties: Array.from({ length: 20 }, (_, i) => ({
      key: '$current_url',
      value: `(path/){${i % 5}}.*${tag}${s}${i}|example`,
      operator: 'regex',
    })),
  })),
  dateRange: { date_from: '-30d' },
  interval: 'day',
});

const poolIsolation: Scenario = {
  name: "query management: eleven heavy queries across three projects of one owner leave another organization's query and /_ready fast",
  cls: 'query',
  async run(ctx) {
    const db = new pg.Pool({ connectionString: ctx.databaseUrl, max: 2 });
    try {
      const projects: number[] = [];
      for (let i = 0; i < 3; i++) {
        const res = await send(ctx.urls.management, {
          method: 'POST',
          path: '/api/projects/',
          headers: { ...json, ...bearer(ctx.personalKey) },
          body: JSON.stringify({ name: `hostile heavy ${i}`, organization: ctx.organizationId }),
        });
        check(res.status === 201, `creating a project: ${res.status}`);
        projects.push(Number(parse(res).id));
      }
      for (const id of projects) await fillProject(db, id, 60_000);
      await fillProject(db, ctx.thirdProjectId, 2_000);
      const tag = randomUUID().slice(0, 6);
      const heavy = Promise.all(
        Array.from({ length: 11 }, (_, i) =>
          trends(ctx, ctx.personalKey, projects[i % 3]!, heavyQuery(`${tag}${i}`), '127.0.0.42'),
        ),
      );
      const bystander = meanwhile(
        heavy,
        () =>
          trends(
            ctx,
            ctx.thirdPersonalKey,
            ctx.thirdProjectId,
            { series: series(), dateRange: { date_from: '-7d' } },
            '127.0.0.43',
          ),
        5,
      );
      const ready = await watch(ctx, '/_ready', heavy);
      const [answers, small] = await Promise.all([heavy, bystander]);
      const statuses = answers.map((a) => a.status);
      check(
        // 504: a heavy query stopped at its deadline, as it should be.
        statuses.every((s) => s === 200 || s === 429 || s === 504),
        `heavy queries got ${statuses}`,
      );
      check(statuses.includes(429), `no heavy query was turned away by the caps: ${statuses}`);
      check(
        small.every((a) => a.status === 200),
        `the other organization got ${small.map((a) => a.status)}`,
      );
      check(
        ready.every((a) => a.status === 200),
        `/_ready answered ${ready.map((a) => a.status)}`,
      );
      // Before: the other organization's query answered 503 after 5.2 s.
      check(worst(small) < 2000, `the other organization's query took up to ${worst(small).toFixed(0)} ms`);
      check(worst(ready) < 1000, `/_ready took up to ${worst(ready).toFixed(0)} ms`);
    } finally {
      await db.end();
    }
  },
};

const answerSize: Scenario = {
  name: 'query management: a breakdown of 1,000 values by hour over 30 days is refused before it runs, naming the field',
  cls: 'query',
  async run(ctx) {
    const res = await trends(ctx, ctx.otherPersonalKey, ctx.otherProjectId, {
      series: series(),
      interval: 'hour',
      dateRange: { date_from: '-30d' },
      breakdownFilter: { breakdown: '$browser', breakdown_limit: 1000 },
    });
    check(
      res.status === 400 && parse(res).attr === 'query.breakdownFilter.breakdown_limit',
      `got ${res.status} ${res.body.slice(0, 200)} (${(res.body.length / MB).toFixed(1)} MB)`,
    );
  },
};

async function waitForStored(ctx: ScenarioContext, event: string): Promise<void> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const res = await send(ctx.urls.management, {
      path: `/api/projects/${ctx.otherProjectId}/events/?event=${encodeURIComponent(event)}`,
      headers: bearer(ctx.otherPersonalKey),
    });
    if (res.status === 200 && (parse(res).results as unknown[]).length > 0) return;
    if (Date.now() > deadline) throw new Error(`the event ${event} was not stored within 30 s`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

const storedValues: Scenario = {
  name: "query management: an event sent with the public token cannot break a property's gt or date filters",
  cls: 'query',
  async run(ctx) {
    const event = `hostile-values-${randomUUID().slice(0, 8)}`;
    const sent = await send(ctx.urls.capture, {
      method: 'POST',
      path: '/i/v0/e/',
      headers: json,
      body: JSON.stringify({
        api_key: ctx.otherToken,
        event,
        distinct_id: 'hostile-values',
        properties: { price: `1${'0'.repeat(400)}`, signup: '2024-02-30' },
      }),
    });
    check(sent.status === 200, `capture got ${sent.status}`);
    await waitForStored(ctx, event);
    for (const filter of [
      { key: 'price', value: 100, operator: 'gt' },
      { key: 'price', value: 100, operator: 'lt' },
      { key: 'signup', value: '2024-01-01', operator: 'is_date_after' },
    ]) {
      const res = await trends(ctx, ctx.otherPersonalKey, ctx.otherProjectId, {
        series: series({ event }),
        properties: [filter],
        trendsFilter: { display: 'BoldNumber' },
      });
      check(res.status === 200, `${JSON.stringify(filter)} got ${res.status} ${res.body.slice(0, 200)}`);
      const n = (parse(res).results as { aggregated_value: number }[])[0]!.aggregated_value;
      check(n === (filter.operator === 'gt' ? 1 : 0), `${JSON.stringify(filter)} counted ${n}`);
    }
  },
};

const textCompare: Scenario = {
  name: 'query management: gt and lt with a value that is no number compare as text (no 500)',
  cls: 'query',
  async run(ctx) {
    for (const operator of ['gt', 'lt', 'gte', 'lte']) {
      const res = await trends(ctx, ctx.otherPersonalKey, ctx.otherProjectId, {
        series: series(),
        properties: [{ key: 'plan', value: 'abc', operator }],
      });
      check(res.status === 200, `${operator} "abc" got ${res.status} ${res.body.slice(0, 200)}`);
    }
  },
};

const notADate: Scenario = {
  name: 'query management: a date filter whose value is no date is a 400 naming it, never a 503 to retry',
  cls: 'query',
  async run(ctx) {
    const res = await trends(ctx, ctx.otherPersonalKey, ctx.otherProjectId, {
      series: series(),
      properties: [{ key: 'signup', value: 'soon', operator: 'is_date_before' }],
    });
    check(
      res.status === 400 && res.headers['retry-after'] === undefined && res.body.includes('signup'),
      `got ${res.status} ${res.body.slice(0, 200)}`,
    );
  },
};

const misleadingErrors: Scenario = {
  name: 'query paths: regexes Postgres cannot run, an overlong path parameter and HEAD /decide/ get answers that say what is wrong',
  cls: 'query',
  async run(ctx) {
    for (const pattern of ['\\pL', 'a{1000}', '(?P<n>a)']) {
      const res = await trends(ctx, ctx.otherPersonalKey, ctx.otherProjectId, {
        series: series(),
        properties: [{ key: 'plan', value: pattern, operator: 'regex' }],
      });
      check(
        res.status === 400 &&
          res.body.includes('database cannot run it') &&
          !res.body.includes('out of the range'),
        `${pattern} got ${res.status} ${res.body.slice(0, 200)}`,
      );
    }
    const long = await send(ctx.urls.management, {
      path: `/api/projects/${'1'.repeat(1100)}/`,
      headers: bearer(ctx.otherPersonalKey),
    });
    check(
      long.status === 414 && !long.body.includes('percent-encoding'),
      `a 1,100-character parameter got ${long.status} ${long.body.slice(0, 200)}`,
    );
    const head = await send(ctx.urls.decide, { method: 'HEAD', path: '/decide/' });
    const said = JSON.stringify({
      type: 'invalid_request',
      code: 'method_not_allowed',
      detail: 'Method "HEAD" not allowed.',
      attr: null,
    });
    check(
      head.status === 405 && Number(head.headers['content-length']) === Buffer.byteLength(said),
      `HEAD /decide/ got ${head.status} with ${head.headers['content-length']} bytes (the HEAD message is ${Buffer.byteLength(said)})`,
    );
  },
};

const dateRanges: Scenario = {
  name: 'query management: date ranges far back, in years 0001-0099 and at 9999 answer right or say why',
  cls: 'query',
  async run(ctx) {
    const ask = (dateRange: Record<string, string>, interval = 'day') =>
      trends(ctx, ctx.otherPersonalKey, ctx.otherProjectId, { series: series(), dateRange, interval });
    const farBack = await ask({ date_from: '-2090y' }, 'month');
    check(
      farBack.status === 400 && parse(farBack).attr === 'dateRange.date_from',
      `-2090y got ${farBack.status} ${farBack.body.slice(0, 200)}`,
    );
    const early = await ask({ date_from: '0050-01-01', date_to: '0050-01-03' });
    check(early.status === 200, `0050 got ${early.status} ${early.body.slice(0, 200)}`);
    const range = parse(early).resolved_date_range as { date_from: string };
    const days = (parse(early).results as { days: string[] }[])[0]!.days;
    check(
      range.date_from.startsWith('0050-01-01') && days.join() === '0050-01-01,0050-01-02,0050-01-03',
      `0050 resolved to ${range.date_from}, days ${days}`,
    );
    const zero = await ask({ date_from: '0000-01-01', date_to: '0000-01-02' });
    check(zero.status === 400 && parse(zero).attr === 'dateRange.date_from', `year 0000 got ${zero.status}`);
    const last = await ask({ date_from: '9999-12-01', date_to: '9999-12-31' });
    check(last.status === 200, `9999-12 got ${last.status} ${last.body.slice(0, 200)}`);
    const lastDays = (parse(last).results as { days: string[] }[])[0]!.days;
    check(lastDays.length === 31 && lastDays[30] === '9999-12-31', `9999-12 has ${lastDays.length} days`);
  },
};

const managementCors: Scenario = {
  name: 'query paths: management answers no foreign Origin, on its API, /_metrics and /api/schema/',
  cls: 'query',
  async run(ctx) {
    const origin = { origin: 'https://evil.example' };
    for (const path of ['/_metrics', '/_health', '/api/schema/', '/api/projects/', '/api/no-such-thing/']) {
      const res = await send(ctx.urls.management, {
        path,
        headers: { ...origin, ...bearer(ctx.otherPersonalKey) },
      });
      const cors = Object.keys(res.headers).filter((h) => h.startsWith('access-control-'));
      check(cors.length === 0, `${path} (${res.status}) carries ${cors}`);
    }
    const preflight = await send(ctx.urls.management, {
      method: 'OPTIONS',
      path: `/api/projects/${ctx.otherProjectId}/query/`,
      headers: { ...origin, 'access-control-request-method': 'POST' },
    });
    check(
      preflight.headers['access-control-allow-origin'] === undefined,
      `a preflight of /query/ allows ${preflight.headers['access-control-allow-origin']}`,
    );
  },
};

const deadline: Scenario = {
  name: 'query management: a query past QUERY_TIMEOUT_MS answers 504 query_timeout and leaves no statement running',
  cls: 'query',
  async run(ctx) {
    // A lock on the events table holds every query statement: deterministic, no data needed.
    const locker = new pg.Client({ connectionString: ctx.databaseUrl });
    await locker.connect();
    const db = new pg.Pool({ connectionString: ctx.databaseUrl, max: 1 });
    try {
      await locker.query('BEGIN');
      await locker.query('LOCK TABLE events IN ACCESS EXCLUSIVE MODE');
      const res = await trends(ctx, ctx.otherPersonalKey, ctx.otherProjectId, { series: series() });
      check(
        res.status === 504 && parse(res).code === 'query_timeout' && res.ms >= 3900 && res.ms < 15_000,
        `a query held past the 4 s deadline got ${res.status} after ${res.ms.toFixed(0)} ms: ${res.body.slice(0, 200)}`,
      );
      const { rows } = await db.query<{ n: string }>(
        `SELECT count(*) AS n FROM pg_stat_activity WHERE application_name = 'sett-management-query' AND state = 'active'`,
      );
      check(rows[0]!.n === '0', `${rows[0]!.n} query statements still running after the deadline`);
    } finally {
      await locker.query('COMMIT').catch(() => undefined);
      await locker.end();
      await db.end();
    }
  },
};

export function buildQueryScenarios(): Scenario[] {
  return [
    deadline,
    compareBuckets,
    regexBudget,
    poolIsolation,
    answerSize,
    storedValues,
    textCompare,
    notADate,
    misleadingErrors,
    dateRanges,
    managementCors,
  ];
}
