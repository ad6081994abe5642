// HogQL from a hostile client, against real Postgres: every scenario is refused with a 400 or
// bounded by the query limits, and nothing leaks or breaks. Cross-project reads through joins,
// subqueries and CTEs see only the caller's project; catalogs, other Sett tables and database
// functions cannot be named; stacked statements, comment and quote tricks stay text; deep
// nesting, parser-crashing chains and huge literal lists are refused before or while parsing
// (and the parser keeps working); a cartesian join ends at the deadline while another project's
// query is answered meanwhile; sleep-like functions do not exist.
import { randomUUID } from 'node:crypto';
import { call, createKey, seed, startHarness, type Fixture, type Harness } from './helpers';

let h: Harness;
let f: Fixture;
let aliceKey: string;
let bobKey: string;
const TIMEOUT_MS = 2000;
const A_EVENTS = 2000;

beforeAll(async () => {
  h = await startHarness({
    query: { timeoutMs: TIMEOUT_MS, maxConcurrent: 4, maxPerUser: 2, maxPerProject: 2 },
  });
  f = await seed(h.prisma);
  aliceKey = await createKey(h.prisma, f.alice.id, ['query:read']);
  bobKey = await createKey(h.prisma, f.bob.id, ['query:read']);
  // Team A: enough events that a four-way cartesian join cannot finish within the deadline.
  await h.pool.query(
    `INSERT INTO events (uuid, team_id, event, distinct_id, timestamp, properties)
     SELECT gen_random_uuid(), $1, 'pageview', 'user-' || (i % 50), now() - make_interval(mins => i), '{}'::jsonb
       FROM generate_series(1, $2) AS i`,
    [f.teamA.id, A_EVENTS],
  );
  // Team B: a secret, a person and a group no query of team A may see.
  await h.pool.query(
    `INSERT INTO events (uuid, team_id, event, distinct_id, timestamp, properties) VALUES ($1, $2, 'secret', 'user-1', now(), '{"token":"hunter2"}')`,
    [randomUUID(), f.teamB.id],
  );
  const person = await h.pool.query<{ id: string }>(
    `INSERT INTO persons (uuid, team_id, properties) VALUES ($1, $2, '{"email":"b@b.test"}') RETURNING id`,
    [randomUUID(), f.teamB.id],
  );
  await h.pool.query(
    `INSERT INTO person_distinct_ids (team_id, distinct_id, person_id) VALUES ($1, 'user-1', $2)`,
    [f.teamB.id, person.rows[0]!.id],
  );
  await h.pool.query(
    `INSERT INTO groups (team_id, group_type_index, group_key, group_properties) VALUES ($1, 0, 'acme', '{"name":"Acme"}')`,
    [f.teamB.id],
  );
});
afterAll(() => h.stop());

const hogql = (
  query: string,
  extra: Record<string, unknown> = {},
  asKey = aliceKey,
  team = () => f.teamA.id,
) =>
  call(h, 'POST', `/api/projects/${team()}/query/`, asKey, {
    query: { kind: 'HogQLQuery', query, ...extra },
    refresh: 'force_blocking',
  });

describe('cross-project reads', () => {
  it.each([
    [
      'a join',
      "SELECT count() FROM events a JOIN events b ON a.distinct_id = b.distinct_id WHERE b.event = 'secret'",
    ],
    ['a subquery in FROM', "SELECT count() FROM (SELECT event FROM events) WHERE event = 'secret'"],
    [
      'a subquery after IN',
      "SELECT count() FROM events WHERE event IN (SELECT event FROM events WHERE event = 'secret')",
    ],
    ['a CTE', "WITH s AS (SELECT * FROM events WHERE event = 'secret') SELECT count() FROM s"],
    [
      'a nested CTE',
      "WITH s AS (SELECT event FROM (SELECT event FROM events)) SELECT count() FROM s WHERE event = 'secret'",
    ],
    [
      'a UNION',
      "SELECT count() FROM (SELECT event FROM events UNION ALL SELECT event FROM events) WHERE event = 'secret'",
    ],
    ['persons', "SELECT count() FROM persons WHERE properties.email = 'b@b.test'"],
    ['groups', "SELECT count() FROM groups WHERE key = 'acme'"],
    ['person properties of events', "SELECT count() FROM events WHERE person.properties.email = 'b@b.test'"],
  ])('through %s sees only its own project', async (_name, query) => {
    const res = await hogql(query);
    expect(res.status).toBe(200);
    expect(res.body.results).toEqual([[0]]);
  });

  it('finds the same rows from their own project (the queries above can match)', async () => {
    const res = await hogql(
      "WITH s AS (SELECT * FROM events WHERE event = 'secret') SELECT count() FROM s",
      {},
      bobKey,
      () => f.teamB.id,
    );
    expect(res.body.results).toEqual([[1]]);
  });

  it('cannot name the project column', async () => {
    const res = await hogql(`SELECT count() FROM events WHERE team_id = ${f.teamB.id}`);
    expect(res.status).toBe(400);
    expect(res.body.detail).toMatch(/unknown field team_id/);
  });
});

describe('names outside the allow-list', () => {
  it.each([
    ['SELECT * FROM pg_catalog.pg_user', /unknown table pg_catalog\.pg_user/],
    ['SELECT * FROM pg_user', /unknown table pg_user/],
    ['SELECT * FROM information_schema.tables', /unknown table information_schema\.tables/],
    ['SELECT * FROM personal_api_keys', /unknown table personal_api_keys/],
    ['SELECT * FROM teams', /unknown table teams/],
    ["SELECT pg_read_file('/etc/passwd')", /unknown function pg_read_file/],
    ["SELECT current_setting('data_directory')", /unknown function current_setting/],
    ['SELECT version()', /unknown function version/],
    ['SELECT sleep(3) FROM events', /unknown function sleep/],
    ['SELECT sleepEachRow(1) FROM events', /unknown function sleepEachRow/],
    ['SELECT pg_sleep(10)', /unknown function pg_sleep/],
    ["SELECT * FROM url('http://127.0.0.1:5432/', 'CSV')", /the table function url\(…\) is not served/],
    ['SELECT * FROM numbers(10) AS n(x)', /table function numbers/],
    ['SELECT count() FROM events SETTINGS max_execution_time = 3600', /./],
  ])('%s is a 400', async (query, detail) => {
    const res = await hogql(query);
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ type: 'validation_error', attr: 'query.query' });
    expect(res.body.detail).toMatch(detail);
  });
});

describe('statements, comments and quotes', () => {
  it('refuses stacked statements, and the table is still there', async () => {
    const res = await hogql('SELECT 1; DROP TABLE events');
    expect(res.status).toBe(400);
    expect(res.body.detail).toMatch(/SyntaxError/);
    const count = await hogql('SELECT count() FROM events');
    expect(count.body.results).toEqual([[A_EVENTS]]);
  });

  it.each([
    ["SELECT count() FROM events WHERE event = 'x'' OR 1=1 --'"],
    ["SELECT count() FROM events WHERE event = 'x\\' OR 1=1 --'"],
    ["SELECT count() FROM events WHERE event = 'a' /* ' OR '1'='1 */"],
    ["SELECT count() FROM events WHERE event = '$1' OR event = '$$'"],
  ])('keeps %s a literal', async (query) => {
    const res = await hogql(query);
    expect(res.status).toBe(200);
    expect(res.body.results).toEqual([[0]]);
  });

  it('binds a placeholder value as a literal', async () => {
    const res = await hogql('SELECT count() FROM events WHERE event = {name}', {
      values: { name: "pageview' OR '1'='1" },
    });
    expect(res.status).toBe(200);
    expect(res.body.results).toEqual([[0]]);
  });

  it('keeps a quoted identifier a name to look up', async () => {
    const res = await hogql('SELECT `event FROM events; DROP TABLE events; --` FROM events');
    expect(res.status).toBe(400);
    expect(res.body.detail).toMatch(/unknown field/);
  });
});

describe('size and depth', () => {
  it('refuses deep nesting before parsing', async () => {
    const res = await hogql(`SELECT ${'('.repeat(30)}1${')'.repeat(30)} FROM events`);
    expect(res.status).toBe(400);
    expect(res.body.detail).toMatch(/nests brackets deeper than 24/);
  });

  it('refuses a chain that overflows the parser, and the parser still answers after', async () => {
    const chain = Array.from({ length: 600 }, (_, i) => `a${i}`).join(' + ');
    const res = await hogql(`SELECT ${chain} FROM events`);
    expect(res.status).toBe(400);
    expect(res.body.detail).toMatch(/could not be parsed/);
    const after = await hogql('SELECT count() FROM events');
    expect(after.status).toBe(200);
    expect(after.body.results).toEqual([[A_EVENTS]]);
  });

  it('refuses a literal list past the length limit, and answers a long one within it', async () => {
    const huge = Array.from({ length: 5000 }, (_, i) => i).join(', ');
    const refused = await hogql(`SELECT count() FROM events WHERE toInt(distinct_id) IN (${huge})`);
    expect(refused.status).toBe(400);
    expect(refused.body.detail).toMatch(/more than 20000 characters/);
    const names = Array.from({ length: 1500 }, (_, i) => `'user-${i}'`).join(',');
    const res = await hogql(`SELECT count() FROM events WHERE distinct_id IN (${names})`);
    expect(res.status).toBe(200);
    expect(res.body.results).toEqual([[A_EVENTS]]);
  });

  it('caps LIMIT and refuses a LIMIT that is not a number of rows', async () => {
    const capped = await hogql('SELECT event FROM events LIMIT 999999999999');
    expect(capped.body).toMatchObject({ limit: 50_000 });
    const bad = await hogql('SELECT event FROM events LIMIT -1');
    expect(bad.status).toBe(400);
  });

  it('refuses too many tables or subqueries in one query', async () => {
    let q = 'SELECT event AS x FROM events';
    for (let i = 0; i < 20; i++) q = `SELECT x FROM (${q})`;
    const nested = await hogql(q);
    expect(nested.status).toBe(400);
    expect(nested.body.detail).toMatch(/more than 16 tables/);
    const ors = Array.from({ length: 40 }, (_, i) => `${i} IN (SELECT ${i})`).join(' OR ');
    const many = await hogql(`SELECT 1 WHERE ${ors}`);
    expect(many.status).toBe(400);
    expect(many.body.detail).toMatch(/more than 32 selects/);
  });
});

describe('time', () => {
  it('ends a cartesian join at the deadline while another project is answered meanwhile', async () => {
    const order: string[] = [];
    const cartesian = hogql(
      'SELECT count() FROM events a CROSS JOIN events b CROSS JOIN events c CROSS JOIN events d',
    ).then((r) => {
      order.push('cartesian');
      return r;
    });
    const other = hogql('SELECT count() FROM events', {}, bobKey, () => f.teamB.id).then((r) => {
      order.push('other');
      return r;
    });
    const [slow, fast] = await Promise.all([cartesian, other]);
    expect(fast.status).toBe(200);
    expect(fast.body.results).toEqual([[1]]);
    expect(slow.status).toBe(504);
    expect(slow.body).toMatchObject({ code: 'query_timeout' });
    expect(order).toEqual(['other', 'cartesian']);
  });

  it('refuses values that would make Postgres fail as a 400, not a 500', async () => {
    const overflow = await hogql('SELECT 3037000500 * 3037000500 * 2');
    expect(overflow.status).toBe(400);
    expect(overflow.body.detail).toMatch(/the database refused the query: bigint out of range/);
    const grouped = await hogql('SELECT distinct_id, count() FROM events');
    expect(grouped.status).toBe(400);
    expect(grouped.body.detail).toMatch(/must appear in the GROUP BY clause/);
  });
});
