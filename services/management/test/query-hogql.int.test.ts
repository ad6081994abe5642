// POST /query/ with PostHog's HogQLQuery (also inside a DataVisualizationNode), parsed by
// PostHog's own parser and compiled to Postgres, against answers computed here over a known event
// set: counts by event, unique users per day in the project's time zone, a property breakdown, a
// person-property join, a date filter relative to now(), subqueries, HAVING, CTEs; HogQL's casts
// (a property compared with a number), {placeholders} from values, {filters}, the limit and its
// cap, and the 400s that name what is not served and where.
import { randomUUID } from 'node:crypto';
import { call, createKey, seed, startHarness, type Fixture, type Harness } from './helpers';

let h: Harness;
let f: Fixture;
let key: string;

const ZONE = 'America/New_York';
const HOUR = 3_600_000;
const NOW = Date.now();

interface Ev {
  event: string;
  distinctId: string;
  at: Date;
  props: Record<string, unknown>;
}
// a and b are one person (plan pro), d another (plan free); c has no person.
const EVENTS: Ev[] = [
  {
    event: 'pageview',
    distinctId: 'a',
    at: new Date(NOW - 1 * HOUR),
    props: { $browser: 'Chrome', amount: '15' },
  },
  {
    event: 'pageview',
    distinctId: 'b',
    at: new Date(NOW - 3 * HOUR),
    props: { $browser: 'Firefox', amount: 5 },
  },
  { event: 'signup', distinctId: 'a', at: new Date(NOW - 26 * HOUR), props: { amount: 'abc' } },
  {
    event: 'pageview',
    distinctId: 'c',
    at: new Date(NOW - 30 * HOUR),
    props: { $browser: 'Chrome', amount: 20.5 },
  },
  { event: 'pageview', distinctId: 'd', at: new Date(NOW - 50 * HOUR), props: { $browser: 'Safari' } },
  { event: 'purchase', distinctId: 'd', at: new Date(NOW - 52 * HOUR), props: { amount: '1e3' } },
  { event: 'pageview', distinctId: 'c', at: new Date(NOW - 10 * 24 * HOUR), props: { $browser: 'Chrome' } },
  { event: 'signup', distinctId: 'd', at: new Date(NOW - 12 * 24 * HOUR), props: {} },
];
const PERSON_OF: Record<string, string | undefined> = { a: 'p1', b: 'p1', d: 'p2' };
const PLAN: Record<string, string> = { p1: 'pro', p2: 'free' };

beforeAll(async () => {
  h = await startHarness();
  f = await seed(h.prisma);
  key = await createKey(h.prisma, f.alice.id, ['query:read']);
  await h.pool.query('UPDATE teams SET timezone = $1 WHERE id = $2', [ZONE, f.teamA.id]);
  for (const [p, dids] of [
    ['p1', ['a', 'b']],
    ['p2', ['d']],
  ] as const) {
    const person = await h.pool.query<{ id: string }>(
      `INSERT INTO persons (uuid, team_id, properties) VALUES ($1, $2, $3) RETURNING id`,
      [randomUUID(), f.teamA.id, JSON.stringify({ plan: PLAN[p] })],
    );
    for (const did of dids)
      await h.pool.query(
        `INSERT INTO person_distinct_ids (team_id, distinct_id, person_id) VALUES ($1, $2, $3)`,
        [f.teamA.id, did, person.rows[0]!.id],
      );
  }
  for (const e of EVENTS)
    await h.pool.query(
      `INSERT INTO events (uuid, team_id, event, distinct_id, timestamp, properties) VALUES ($1, $2, $3, $4, $5, $6)`,
      [randomUUID(), f.teamA.id, e.event, e.distinctId, e.at, JSON.stringify(e.props)],
    );
  // Another project's events: never in any answer of team A.
  for (let i = 0; i < 3; i++)
    await h.pool.query(
      `INSERT INTO events (uuid, team_id, event, distinct_id, timestamp, properties) VALUES ($1, $2, 'pageview', 'a', now(), '{"$browser":"Chrome"}')`,
      [randomUUID(), f.teamB.id],
    );
});
afterAll(() => h.stop());

const hogql = (query: string, extra: Record<string, unknown> = {}) =>
  call(h, 'POST', `/api/projects/${f.teamA.id}/query/`, key, {
    query: { kind: 'HogQLQuery', query, ...extra },
    refresh: 'force_blocking',
  });

/** Counts of `keyOf` over the events, as [key, count] sorted by `order`. */
function countBy<K>(events: Ev[], keyOf: (e: Ev) => K): Map<K, number> {
  const out = new Map<K, number>();
  for (const e of events) out.set(keyOf(e), (out.get(keyOf(e)) ?? 0) + 1);
  return out;
}
const dayIn = (d: Date) => new Intl.DateTimeFormat('en-CA', { timeZone: ZONE }).format(d);
const within7Days = EVENTS.filter((e) => e.at.getTime() > NOW - 7 * 24 * HOUR);

describe('HogQLQuery', () => {
  it("answers counts by event over the last 7 days in PostHog's shape", async () => {
    const res = await hogql(
      'SELECT event, count() FROM events WHERE timestamp > now() - INTERVAL 7 DAY GROUP BY event ORDER BY count() DESC, event',
    );
    expect(res.status).toBe(200);
    const expected = [...countBy(within7Days, (e) => e.event)]
      .sort((x, y) => y[1] - x[1] || x[0].localeCompare(y[0]))
      .map(([event, n]) => [event, n]);
    expect(res.body).toMatchObject({
      columns: ['event', 'count()'],
      types: [
        ['event', 'String'],
        ['count()', 'UInt64'],
      ],
      results: expected,
      hasMore: false,
      limit: 100,
      offset: 0,
      is_cached: false,
    });
    expect(res.body.hogql).toBe(
      'SELECT event, count() FROM events WHERE timestamp > now() - toIntervalDay(7) GROUP BY event ORDER BY count() DESC, event ASC LIMIT 100',
    );
  });

  it("counts unique users per day in the project's time zone", async () => {
    const res = await hogql(
      'SELECT toDate(timestamp) AS day, uniq(person_id) AS users FROM events GROUP BY day ORDER BY day',
    );
    expect(res.status).toBe(200);
    const byDay = new Map<string, Set<string>>();
    for (const e of EVENTS) {
      const day = dayIn(e.at);
      if (!byDay.has(day)) byDay.set(day, new Set());
      byDay.get(day)!.add(PERSON_OF[e.distinctId] ?? `d:${e.distinctId}`);
    }
    expect(res.body.types).toEqual([
      ['day', 'Date'],
      ['users', 'UInt64'],
    ]);
    expect(res.body.results).toEqual(
      [...byDay].sort(([a], [b]) => a.localeCompare(b)).map(([d, s]) => [d, s.size]),
    );
  });

  it('breaks down by a property, absent values as null (last)', async () => {
    const res = await hogql(
      "SELECT properties.$browser, count() AS n FROM events WHERE event = 'pageview' GROUP BY properties.$browser ORDER BY properties.$browser",
    );
    expect(res.status).toBe(200);
    expect(res.body.columns).toEqual(['$browser', 'n']);
    expect(res.body.types[0]).toEqual(['$browser', 'Nullable(String)']);
    const counts = countBy(
      EVENTS.filter((e) => e.event === 'pageview'),
      (e) => (e.props.$browser as string | undefined) ?? null,
    );
    const expected = [...counts].sort(([a], [b]) => (a === null ? 1 : b === null ? -1 : a.localeCompare(b)));
    expect(res.body.results).toEqual(expected);
  });

  it('joins events to persons on person_id and reads person properties both ways', async () => {
    const expected = [
      ...countBy(
        EVENTS.filter((e) => PERSON_OF[e.distinctId]),
        (e) => PLAN[PERSON_OF[e.distinctId]!]!,
      ),
    ].sort(([a], [b]) => a.localeCompare(b));
    const joined = await hogql(
      'SELECT p.properties.plan AS plan, count() FROM events e JOIN persons p ON p.id = e.person_id GROUP BY plan ORDER BY plan',
    );
    expect(joined.status).toBe(200);
    expect(joined.body.results).toEqual(expected);
    const lazy = await hogql(
      'SELECT person.properties.plan AS plan, count() FROM events WHERE person.properties.plan IS NOT NULL GROUP BY plan ORDER BY plan',
    );
    expect(lazy.status).toBe(200);
    expect(lazy.body.results).toEqual(expected);
  });

  it('filters relative to now() and today()', async () => {
    const res = await hogql('SELECT count() FROM events WHERE timestamp >= now() - INTERVAL 48 HOUR');
    expect(res.body.results).toEqual([[EVENTS.filter((e) => e.at.getTime() >= NOW - 48 * HOUR).length]]);
    const today = await hogql('SELECT count() FROM events WHERE toDate(timestamp) = today()');
    const todayText = dayIn(new Date());
    expect(today.body.results).toEqual([[EVENTS.filter((e) => dayIn(e.at) === todayText).length]]);
  });

  it('answers subqueries in FROM and after IN, CTEs and HAVING', async () => {
    const perId = countBy(EVENTS, (e) => e.distinctId);
    const repeat = [...perId].filter(([, n]) => n >= 2).map(([d]) => d);

    const from = await hogql(
      'SELECT count() FROM (SELECT distinct_id, count() AS c FROM events GROUP BY distinct_id) WHERE c >= 2',
    );
    expect(from.status).toBe(200);
    expect(from.body.results).toEqual([[repeat.length]]);

    const having = await hogql(
      'SELECT distinct_id, count() AS n FROM events GROUP BY distinct_id HAVING n >= 2 ORDER BY distinct_id',
    );
    expect(having.body.results).toEqual(repeat.sort().map((d) => [d, perId.get(d)]));

    const signedUp = new Set(EVENTS.filter((e) => e.event === 'signup').map((e) => e.distinctId));
    const inSub = await hogql(
      "SELECT count() FROM events WHERE event = 'pageview' AND distinct_id IN (SELECT distinct_id FROM events WHERE event = 'signup')",
    );
    expect(inSub.body.results).toEqual([
      [EVENTS.filter((e) => e.event === 'pageview' && signedUp.has(e.distinctId)).length],
    ]);

    const cte = await hogql(
      'WITH per_id AS (SELECT distinct_id, count() AS c FROM events GROUP BY distinct_id) SELECT max(c), min(c) FROM per_id',
    );
    expect(cte.status).toBe(200);
    expect(cte.body.results).toEqual([[Math.max(...perId.values()), Math.min(...perId.values())]]);
  });

  it('compares a text property with a number as a number, values that are not numbers never matching', async () => {
    const res = await hogql(
      'SELECT count(), sum(toFloat(properties.amount)) FROM events WHERE properties.amount > 10',
    );
    expect(res.status).toBe(200);
    const amounts = EVENTS.map((e) => Number(e.props.amount)).filter((n) => Number.isFinite(n) && n > 10);
    expect(res.body.results).toEqual([[amounts.length, amounts.reduce((a, b) => a + b, 0)]]);
    // Arithmetic on text asks for a cast.
    const bad = await hogql('SELECT properties.amount + 1 FROM events');
    expect(bad.status).toBe(400);
    expect(bad.body.detail).toMatch(/cast it with toFloat/);
  });

  it('fills {placeholders} from values and applies {filters}', async () => {
    const res = await hogql('SELECT count() FROM events WHERE event = {name} AND {filters}', {
      values: { name: 'pageview' },
      filters: {
        dateRange: { date_from: '-2d' },
        properties: [{ key: '$browser', value: 'Chrome', operator: 'exact', type: 'event' }],
      },
    });
    expect(res.status).toBe(200);
    // -2d: from midnight two days ago in the project's zone.
    const expected = EVENTS.filter(
      (e) =>
        e.event === 'pageview' &&
        e.props.$browser === 'Chrome' &&
        dayIn(e.at) >= dayIn(new Date(NOW - 2 * 24 * HOUR)),
    ).length;
    expect(res.body.results).toEqual([[expected]]);

    const missing = await hogql('SELECT count() FROM events WHERE event = {name}');
    expect(missing.status).toBe(400);
    expect(missing.body.detail).toMatch(/\{name\} has no value/);
  });

  it('limits to 100 by default and caps LIMIT at 50,000, with hasMore', async () => {
    const two = await hogql('SELECT event FROM events ORDER BY timestamp LIMIT 2');
    expect(two.body).toMatchObject({ limit: 2, hasMore: true });
    expect(two.body.results).toHaveLength(2);
    const capped = await hogql('SELECT event FROM events LIMIT 60000');
    expect(capped.body).toMatchObject({ limit: 50_000, hasMore: false });
    expect(capped.body.hogql).toMatch(/LIMIT 50000$/);
    const paged = await hogql('SELECT event FROM events ORDER BY timestamp LIMIT 2 OFFSET 7');
    expect(paged.body).toMatchObject({ limit: 2, offset: 7, hasMore: false });
    expect(paged.body.results).toHaveLength(EVENTS.length - 7);
  });

  it('answers inside a DataVisualizationNode as its source', async () => {
    const res = await call(h, 'POST', `/api/projects/${f.teamA.id}/query/`, key, {
      query: {
        kind: 'DataVisualizationNode',
        source: { kind: 'HogQLQuery', query: 'SELECT count() FROM events' },
      },
    });
    expect(res.status).toBe(200);
    expect(res.body.results).toEqual([[EVENTS.length]]);
  });

  it('answers timestamps with the offset of the project zone, and toTimeZone changes it', async () => {
    const res = await hogql(
      "SELECT timestamp, toTimeZone(timestamp, 'UTC'), toStartOfDay(timestamp) FROM events ORDER BY timestamp DESC LIMIT 1",
    );
    expect(res.status).toBe(200);
    const [local, utc, day] = res.body.results[0] as string[];
    expect(Date.parse(local!)).toBe(EVENTS[0]!.at.getTime());
    expect(local).toMatch(/-0[45]:00$/);
    expect(utc).toMatch(/\+00:00$/);
    expect(Date.parse(utc!)).toBe(EVENTS[0]!.at.getTime());
    expect(day).toMatch(new RegExp(`^${dayIn(EVENTS[0]!.at)}T00:00:00(\\.000)?-0[45]:00$`));
    expect(res.body.types.map((t: string[]) => t[1])).toEqual([
      `DateTime64(6, '${ZONE}')`,
      "DateTime64(6, 'UTC')",
      `DateTime64(6, '${ZONE}')`,
    ]);
  });

  it.each([
    ['SELECT event FROM events WHERE', /SyntaxError at line 1, column \d+/],
    ['SELECT * FROM sessions', /unknown table sessions: .*line 1, column 15/],
    ['SELECT sleep(3) FROM events', /unknown function sleep/],
    ['SELECT event FROM events SETTINGS max_threads = 1', /SETTINGS|Unsupported/],
    ['SELECT event FROM events LIMIT 5 BY event', /LIMIT BY is not served/],
    ['SELECT nope FROM events', /unknown field nope/],
    ["SELECT count() FROM events WHERE match(event, '(?P<x>a)')", /regular expression/],
    ['SELECT count() OVER (PARTITION BY event) FROM events', /WindowFunction is not served/],
    ['SELECT event FROM events ARRAY JOIN [1, 2] AS x', /ARRAY JOIN is not served/],
  ])('refuses %s with a 400 naming it', async (query, detail) => {
    const res = await hogql(query);
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ type: 'validation_error', attr: 'query.query' });
    expect(res.body.detail).toMatch(detail);
  });
});

describe('HogQL functions', () => {
  it('match function names without regard to case, each keeping its meaning', async () => {
    const res = await hogql(
      "SELECT COUNT(), countif(event = 'signup'), ISNOTNULL(properties.$browser), ISNULL(properties.$browser) FROM events GROUP BY ISNOTNULL(properties.$browser), ISNULL(properties.$browser) ORDER BY 3",
    );
    expect(res.status).toBe(200);
    const withBrowser = EVENTS.filter((e) => e.props.$browser !== undefined);
    const without = EVENTS.filter((e) => e.props.$browser === undefined);
    expect(res.body.results).toEqual([
      [without.length, without.filter((e) => e.event === 'signup').length, false, true],
      [withBrowser.length, withBrowser.filter((e) => e.event === 'signup').length, true, false],
    ]);
  });

  it('answers time functions in the project zone, intervals, dateDiff and multiIf', async () => {
    const res = await hogql(
      "SELECT toStartOfWeek(toDateTime('2026-11-26 10:00:00')), toStartOfWeek(toDateTime('2026-11-26 10:00:00'), 1), toStartOfMonth(toDateTime('2026-11-26 10:00:00')), dateDiff('day', toDateTime('2026-11-01 23:00:00'), toDateTime('2026-11-02 01:00:00')), dateDiff('month', toDate('2026-01-31'), toDate('2026-03-01')), multiIf(1 > 2, 'a', 2 > 1, 'b', 'c'), toDate('2026-11-26') + INTERVAL 1 MONTH, toYear(toDate('2026-11-26'))",
    );
    expect(res.status).toBe(200);
    expect(res.body.results).toEqual([
      ['2026-11-22', '2026-11-23', '2026-11-01', 1, 2, 'b', '2026-12-26', 2026],
    ]);
  });

  it('answers quantile, groupArray with its cap, avg and round', async () => {
    const res = await hogql(
      'SELECT quantile(0.5)(toFloat(properties.amount)), length(groupArray(2)(event)), avg(toFloat(properties.amount)), round(1.2345, 2) FROM events',
    );
    expect(res.status).toBe(200);
    const amounts = EVENTS.map((e) => Number(e.props.amount))
      .filter((n) => Number.isFinite(n))
      .sort((a, b) => a - b);
    const mid = amounts.length / 2;
    const median = amounts.length % 2 ? amounts[Math.floor(mid)]! : (amounts[mid - 1]! + amounts[mid]!) / 2;
    const [q, n, avg, rounded] = res.body.results[0];
    expect(q).toBeCloseTo(median);
    expect(n).toBe(2);
    expect(avg).toBeCloseTo(amounts.reduce((a, b) => a + b, 0) / amounts.length);
    expect(rounded).toBe(1.23);
  });
});

describe('stored values that are not what a query expects', () => {
  it('reads a text property compared with a date as a date, and other text as null, never failing', async () => {
    for (const d of ['2026-11-01', '2026-11-01T12:00:00+02:00', 'not a date', '2026-02-30', '12345678901'])
      await h.pool.query(
        `INSERT INTO events (uuid, team_id, event, distinct_id, timestamp, properties) VALUES ($1, $2, 'dated', 'x', now(), $3)`,
        [randomUUID(), f.teamA2.id, JSON.stringify({ d })],
      );
    const res = await call(h, 'POST', `/api/projects/${f.teamA2.id}/query/`, key, {
      query: {
        kind: 'HogQLQuery',
        query:
          "SELECT properties.d, properties.d > toDateTime('2026-10-01 00:00:00'), toDate(properties.d) FROM events ORDER BY properties.d",
      },
    });
    expect(res.status).toBe(200);
    expect(res.body.results).toEqual([
      ['12345678901', null, null],
      ['2026-02-30', null, null],
      ['2026-11-01', true, '2026-11-01'],
      ['2026-11-01T12:00:00+02:00', true, '2026-11-01'],
      ['not a date', null, null],
    ]);
  });
});
