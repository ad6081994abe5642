// Abuse scenarios of HogQL (POST /query/ with a HogQLQuery) against the running management
// process. HogQL is SQL from whoever holds a key with query:read, so each scenario is an attack
// with a claim about the whole:
// - reads of another organization's project through joins, subqueries, CTEs, a UNION, persons,
//   groups and person properties find nothing, while the same text from that project finds it;
// - catalogs, other Sett tables, database functions and sleeps are unknown names, refused at once;
// - stacked statements, comment and quote tricks and placeholder values stay literals;
// - deep nesting, texts that overflow the parser and huge literal lists, sent together, are
//   refused quickly while /_health keeps answering, and the parser answers afterwards;
// - one organization's texts that are slow to parse do not hold another's HogQL up;
// - cartesian joins end at the deadline while another organization's HogQL is answered, and no
//   statement is left running.
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { endPool } from '@sett/db';
import { newProject, type Scenario, type ScenarioContext } from './scenarios';
import { bearer, check, json, meanwhile, parse, send, type Answer } from './scenario-kit';

function hogql(
  ctx: ScenarioContext,
  key: string,
  projectId: number,
  query: string,
  extra = {},
  from?: string,
) {
  return send(ctx.urls.management, {
    method: 'POST',
    path: `/api/projects/${projectId}/query/`,
    headers: { ...json, ...bearer(key) },
    body: JSON.stringify({ query: { kind: 'HogQLQuery', query, ...extra }, refresh: 'force_blocking' }),
    from,
  });
}

const results = (a: Answer) => JSON.stringify(parse(a).results);
const shown = (a: Answer) => `${a.status} ${a.body.slice(0, 200)}`;

/** Writes `n` pageviews of fifty distinct ids into a project, over the last `n` minutes. */
async function fill(db: pg.Pool, projectId: number, n: number): Promise<void> {
  await db.query(
    `INSERT INTO events (uuid, team_id, event, distinct_id, timestamp, properties)
     SELECT gen_random_uuid(), $1, 'pageview', 'user-' || (i % 50), now() - make_interval(mins => i), '{}'::jsonb
       FROM generate_series(1, $2) AS i`,
    [projectId, n],
  );
}

/** Runs `work` with a pool on the services' database, ended before returning. */
async function withDb<T>(ctx: ScenarioContext, work: (db: pg.Pool) => Promise<T>): Promise<T> {
  const db = new pg.Pool({ connectionString: ctx.databaseUrl, max: 2 });
  try {
    return await work(db);
  } finally {
    await endPool(db);
  }
}

const crossProject: Scenario = {
  name: "query management: HogQL through joins, subqueries, CTEs, a UNION, persons, groups and person properties finds nothing of another organization's project",
  cls: 'query',
  async run(ctx) {
    const tag = randomUUID().slice(0, 8);
    const secret = `hogql-secret-${tag}`;
    const own = await newProject(ctx, `hostile hogql ${tag}`);
    await withDb(ctx, async (db) => {
      await fill(db, own.id, 20);
      // Tenant B's event, person (by the same distinct id as tenant A's events) and group.
      await db.query(
        `INSERT INTO events (uuid, team_id, event, distinct_id, timestamp, properties)
         VALUES (gen_random_uuid(), $1, $2, 'user-1', now(), '{"token":"hunter2"}')`,
        [ctx.otherProjectId, secret],
      );
      const person = await db.query<{ id: string }>(
        `INSERT INTO persons (uuid, team_id, properties) VALUES (gen_random_uuid(), $1, $2) RETURNING id`,
        [ctx.otherProjectId, JSON.stringify({ email: `${tag}@b.test` })],
      );
      await db.query(
        `INSERT INTO person_distinct_ids (team_id, distinct_id, person_id) VALUES ($1, 'user-1', $2)
         ON CONFLICT DO NOTHING`,
        [ctx.otherProjectId, person.rows[0]!.id],
      );
      await db.query(
        `INSERT INTO groups (team_id, group_type_index, group_key, group_properties) VALUES ($1, 0, $2, '{}')`,
        [ctx.otherProjectId, `acme-${tag}`],
      );
    });
    const attempts: Array<[string, string]> = [
      [
        'a join',
        `SELECT count() FROM events a JOIN events b ON a.distinct_id = b.distinct_id WHERE b.event = '${secret}'`,
      ],
      ['a subquery in FROM', `SELECT count() FROM (SELECT event FROM events) WHERE event = '${secret}'`],
      [
        'a subquery after IN',
        `SELECT count() FROM events WHERE event IN (SELECT event FROM events WHERE event = '${secret}')`,
      ],
      ['a CTE', `WITH s AS (SELECT * FROM events WHERE event = '${secret}') SELECT count() FROM s`],
      [
        'a UNION',
        `SELECT count() FROM (SELECT event FROM events UNION ALL SELECT event FROM events) WHERE event = '${secret}'`,
      ],
      ['persons', `SELECT count() FROM persons WHERE properties.email = '${tag}@b.test'`],
      ['groups', `SELECT count() FROM groups WHERE key = 'acme-${tag}'`],
      ['person properties', `SELECT count() FROM events WHERE person.properties.email = '${tag}@b.test'`],
    ];
    for (const [how, query] of attempts) {
      const res = await hogql(ctx, ctx.personalKey, own.id, query);
      check(res.status === 200 && results(res) === '[[0]]', `through ${how}: ${shown(res)}`);
    }
    // The same texts match from the project that holds the rows.
    for (const [how, query] of [attempts[3]!, attempts[5]!, attempts[6]!]) {
      const res = await hogql(ctx, ctx.otherPersonalKey, ctx.otherProjectId, query);
      check(res.status === 200 && results(res) === '[[1]]', `${how} from its own project: ${shown(res)}`);
    }
    const column = await hogql(
      ctx,
      ctx.personalKey,
      own.id,
      `SELECT count() FROM events WHERE team_id = ${ctx.otherProjectId}`,
    );
    check(
      column.status === 400 && /unknown field team_id/.test(column.body),
      `naming team_id: ${shown(column)}`,
    );
  },
};

const unknownNames: Scenario = {
  name: 'query management: HogQL naming catalogs, other Sett tables, database functions or sleeps is a 400 naming them, at once',
  cls: 'query',
  async run(ctx) {
    const names: Array<[string, string]> = [
      ['SELECT * FROM pg_catalog.pg_user', 'pg_catalog.pg_user'],
      ['SELECT * FROM information_schema.tables', 'information_schema.tables'],
      ['SELECT * FROM personal_api_keys', 'personal_api_keys'],
      ['SELECT * FROM teams', 'teams'],
      ['SELECT * FROM public.events', 'public.events'],
      ["SELECT pg_read_file('/etc/passwd')", 'pg_read_file'],
      ["SELECT current_setting('data_directory')", 'current_setting'],
      ["SELECT set_config('statement_timeout', '0', false)", 'set_config'],
      ['SELECT version()', 'version'],
      ['SELECT pg_sleep(10)', 'pg_sleep'],
      ['SELECT sleep(3) FROM events', 'sleep'],
      ['SELECT sleepEachRow(1) FROM events', 'sleepEachRow'],
      ["SELECT * FROM url('http://127.0.0.1/', 'JSONEachRow')", 'url'],
    ];
    for (const [query, name] of names) {
      const res = await hogql(ctx, ctx.otherPersonalKey, ctx.otherProjectId, query);
      const body = res.status === 400 ? parse(res) : {};
      check(
        res.status === 400 && body.attr === 'query.query' && String(body.detail).includes(name),
        `${query}: ${shown(res)}`,
      );
      check(res.ms < 1000, `${query} took ${res.ms.toFixed(0)} ms to refuse`);
    }
  },
};

const literals: Scenario = {
  name: 'query management: stacked statements, comment and quote tricks and placeholder values in HogQL stay literals, and events stay',
  cls: 'query',
  async run(ctx) {
    const { id } = await newProject(ctx, `hostile hogql literals ${randomUUID().slice(0, 8)}`);
    await withDb(ctx, (db) => fill(db, id, 30));
    const run = (query: string, extra = {}) => hogql(ctx, ctx.personalKey, id, query, extra);
    const stacked = await run('SELECT 1; DROP TABLE events');
    check(
      stacked.status === 400 && /SyntaxError/.test(stacked.body),
      `stacked statements: ${shown(stacked)}`,
    );
    for (const query of [
      "SELECT count() FROM events WHERE event = 'x'' OR 1=1 --'",
      "SELECT count() FROM events WHERE event = 'x\\' OR 1=1 --'",
      "SELECT count() FROM events WHERE event = 'a' /* ' OR '1'='1 */",
      "SELECT count() FROM events WHERE event = '$1' OR event = '$$'",
      "SELECT count() FROM events WHERE event = E'\\x27 OR 1=1'",
    ]) {
      const res = await run(query);
      // A 400 is as good as 0 rows (the text is not HogQL); a count of the table is the leak.
      check(res.status === 400 || results(res) === '[[0]]', `${query}: ${shown(res)}`);
    }
    const bound = await run('SELECT count() FROM events WHERE event = {name}', {
      values: { name: "pageview' OR '1'='1" },
    });
    check(bound.status === 200 && results(bound) === '[[0]]', `a placeholder value: ${shown(bound)}`);
    const quoted = await run('SELECT `event FROM events; DROP TABLE events; --` FROM events');
    check(
      quoted.status === 400 && /unknown field/.test(quoted.body),
      `a quoted identifier: ${shown(quoted)}`,
    );
    const count = await run('SELECT count() FROM events');
    check(results(count) === '[[30]]', `the project's events afterwards: ${shown(count)}`);
  },
};

const sizeAndDepth: Scenario = {
  name: 'query management: 24 HogQL texts nested 5,000 deep, overflowing the parser or listing 5,000 values, sent at once, are refused while /_health answers, and the parser works after',
  cls: 'query',
  async run(ctx) {
    // 5,000 deep: deeper texts are over the length limit, a refusal of their own.
    const deep = `SELECT ${'('.repeat(5000)}1${')'.repeat(5000)}`;
    const chain = `SELECT ${Array.from({ length: 600 }, (_, i) => `a${i}`).join(' + ')} FROM events`;
    const list = `SELECT count() FROM events WHERE toInt(distinct_id) IN (${Array.from({ length: 5000 }, (_, i) => i).join(', ')})`;
    const texts = [deep, chain, list].flatMap((t) => Array.from({ length: 8 }, () => t));
    const all = Promise.all(
      texts.map((t, i) =>
        hogql(ctx, ctx.otherPersonalKey, ctx.otherProjectId, t, {}, `127.0.0.${50 + (i % 8)}`),
      ),
    );
    const health = await meanwhile(all, () =>
      send(ctx.urls.management, { path: '/_health', from: '127.0.0.44' }),
    );
    const answers = await all;
    const expected = [/nests brackets deeper than/, /could not be parsed/, /more than 20000 characters/];
    answers.forEach((a, i) => {
      check(a.status === 400 && expected[Math.floor(i / 8)]!.test(a.body), `text ${i}: ${shown(a)}`);
    });
    const slowest = Math.max(...answers.map((a) => a.ms));
    // One project's texts parse one after another; eight of them crash the parser (a fresh worker
    // each), which took 1.5-4 s for the last in line.
    check(slowest < 8000, `the slowest refusal took ${slowest.toFixed(0)} ms`);
    const worstHealth = Math.max(...health.map((a) => a.ms));
    check(
      health.every((a) => a.status === 200) && worstHealth < 500,
      `/_health meanwhile: ${health.map((a) => a.status)} up to ${worstHealth.toFixed(0)} ms`,
    );
    const after = await hogql(ctx, ctx.otherPersonalKey, ctx.otherProjectId, 'SELECT 1 + 1');
    check(after.status === 200 && results(after) === '[[2]]', `a query after them: ${shown(after)}`);
  },
};

const parserTurns: Scenario = {
  name: "query management: six HogQL texts of one organization that take the parser about a second each leave another organization's HogQL answered in under a second",
  cls: 'query',
  async run(ctx) {
    const tag = randomUUID().slice(0, 8);
    // Distinct texts (nothing answered from memory) of 400 calls: slow to parse, within every limit.
    const slow = (i: number) =>
      `SELECT '${tag}-${i}', ${Array.from({ length: 400 }, (_, k) => `lower(c${k})`).join(', ')} FROM events`;
    const flood = Promise.all(
      Array.from({ length: 6 }, (_, i) =>
        hogql(ctx, ctx.otherPersonalKey, ctx.otherProjectId, slow(i), {}, `127.0.0.${70 + (i % 4)}`),
      ),
    );
    let i = 0;
    const other = meanwhile(flood, () =>
      hogql(
        ctx,
        ctx.thirdPersonalKey,
        ctx.thirdProjectId,
        `SELECT ${i++} + 1 AS ${tag.replace(/\d/g, 'x')}`,
        {},
        '127.0.0.75',
      ),
    );
    const [answers, seen] = await Promise.all([flood, other]);
    // Each is refused (an unknown field c0, or past the parse deadline) or turned away: bounded.
    check(
      answers.every((a) => a.status === 400 || a.status === 429),
      `the slow texts got ${answers.map(shown)}`,
    );
    const worst = Math.max(...seen.map((a) => a.ms));
    check(
      seen.every((a) => a.status === 200),
      `the other organization got ${seen.map(shown)}`,
    );
    check(
      worst < 1000,
      `the other organization's HogQL took up to ${worst.toFixed(0)} ms (${seen.length} queries)`,
    );
  },
};

const cartesian: Scenario = {
  name: "query management: HogQL cartesian joins end at QUERY_TIMEOUT_MS with 504 while another organization's HogQL answers in time, and no statement is left running",
  cls: 'query',
  async run(ctx) {
    const { id } = await newProject(ctx, `hostile hogql cartesian ${randomUUID().slice(0, 8)}`);
    await withDb(ctx, (db) => fill(db, id, 2000));
    const cross = 'SELECT count() FROM events a CROSS JOIN events b CROSS JOIN events c CROSS JOIN events d';
    const heavy = Promise.all(
      [0, 1, 2].map((i) => hogql(ctx, ctx.personalKey, id, cross, {}, `127.0.0.${60 + i}`)),
    );
    const bystander = meanwhile(heavy, () =>
      hogql(
        ctx,
        ctx.thirdPersonalKey,
        ctx.thirdProjectId,
        'SELECT event, count() FROM events GROUP BY event',
        {},
        '127.0.0.63',
      ),
    );
    const [answers, small] = await Promise.all([heavy, bystander]);
    // Past the per-user slots a join is turned away with 429 before it runs: bounded too.
    check(
      answers.every((a) => (a.status === 504 && parse(a).code === 'query_timeout') || a.status === 429),
      `cartesian joins got ${answers.map(shown)}`,
    );
    check(
      answers.some((a) => a.status === 504),
      `no join ran to the deadline: ${answers.map((a) => a.status)}`,
    );
    check(
      answers.every((a) => a.status !== 504 || (a.ms >= 3900 && a.ms < 15_000)),
      `the joins ended after ${answers.map((a) => a.ms.toFixed(0))} ms`,
    );
    const worst = Math.max(...small.map((a) => a.ms));
    check(
      small.every((a) => a.status === 200),
      `the other organization got ${small.map(shown)}`,
    );
    check(worst < 2000, `the other organization's HogQL took up to ${worst.toFixed(0)} ms`);
    const running = await withDb(ctx, (db) =>
      db.query<{ n: string }>(
        `SELECT count(*) AS n FROM pg_stat_activity WHERE application_name = 'sett-management-query' AND state = 'active'`,
      ),
    );
    check(
      running.rows[0]!.n === '0',
      `${running.rows[0]!.n} query statements still running after the deadline`,
    );
  },
};

export function buildHogqlScenarios(): Scenario[] {
  return [crossProject, unknownNames, literals, sizeAndDepth, parserTurns, cartesian];
}
