// POST /query/ with PostHog's EventsQuery (also inside a DataTableNode) against a reference
// computed here over the same events: columns and types, rows newest first, pages with hasMore,
// aggregates grouped by the other columns (a merged person counted once), property and person
// filters, HogQL in select, where and orderBy meaning what it means in HogQLQuery, and the 400s
// for what is not served.
import { randomUUID } from 'node:crypto';
import { call, createKey, seed, startHarness, type Fixture, type Harness } from './helpers';

let h: Harness;
let f: Fixture;
let key: string;

interface Ev {
  event: string;
  distinctId: string;
  at: string;
  props: Record<string, unknown>;
}
const EVENTS: Ev[] = [
  {
    event: 'pageview',
    distinctId: 'a',
    at: '2026-11-20T10:00:00Z',
    props: { $browser: 'Chrome', $current_url: '/a' },
  },
  {
    event: 'pageview',
    distinctId: 'b',
    at: '2026-11-20T11:00:00Z',
    props: { $browser: 'Firefox', $screen_name: 'Home' },
  },
  { event: 'signup', distinctId: 'a', at: '2026-11-20T12:00:00Z', props: { plan: 'pro' } },
  { event: 'pageview', distinctId: 'c', at: '2026-11-20T13:00:00Z', props: { $browser: 'Chrome' } },
  {
    event: 'pageview',
    distinctId: 'a',
    at: '2026-11-21T09:00:00Z',
    props: { $browser: 'Safari', $current_url: '/b' },
  },
];
// a and b are one person (merged); c has no person.
let personUuid = '';

beforeAll(async () => {
  h = await startHarness();
  f = await seed(h.prisma);
  key = await createKey(h.prisma, f.alice.id, ['query:read']);
  personUuid = randomUUID();
  const person = await h.pool.query<{ id: string }>(
    `INSERT INTO persons (uuid, team_id, properties) VALUES ($1, $2, '{"email":"a@example.com"}') RETURNING id`,
    [personUuid, f.teamA.id],
  );
  for (const did of ['a', 'b'])
    await h.pool.query(
      `INSERT INTO person_distinct_ids (team_id, distinct_id, person_id) VALUES ($1, $2, $3)`,
      [f.teamA.id, did, person.rows[0]!.id],
    );
  for (const e of EVENTS)
    await h.pool.query(
      `INSERT INTO events (uuid, team_id, event, distinct_id, timestamp, properties) VALUES ($1, $2, $3, $4, $5, $6)`,
      [randomUUID(), f.teamA.id, e.event, e.distinctId, e.at, JSON.stringify(e.props)],
    );
});
afterAll(() => h.stop());

const query = (q: Record<string, unknown>) =>
  call(h, 'POST', `/api/projects/${f.teamA.id}/query/`, key, {
    query: { kind: 'EventsQuery', after: '2026-11-01', ...q },
  });

const newestFirst = [...EVENTS].sort((x, y) => y.at.localeCompare(x.at));

describe('EventsQuery', () => {
  it('answers columns, types and rows, newest first, with the event as an object for *', async () => {
    const res = await query({ select: ['*', 'event', 'timestamp', 'properties.$browser', 'distinct_id'] });
    expect(res.status).toBe(200);
    expect(res.body.columns).toEqual(['*', 'event', 'timestamp', 'properties.$browser', 'distinct_id']);
    expect(res.body.types.slice(1)).toEqual(['String', "DateTime64(6, 'UTC')", 'Nullable(String)', 'String']);
    expect(res.body.results.map((r: unknown[]) => [r[1], r[2], r[3], r[4]])).toEqual(
      newestFirst.map((e) => [e.event, new Date(e.at).toISOString(), e.props.$browser ?? null, e.distinctId]),
    );
    expect(res.body.results[0][0]).toMatchObject({
      event: 'pageview',
      distinct_id: 'a',
      properties: { $current_url: '/b' },
    });
    expect(res.body).toMatchObject({ hasMore: false, limit: 100, offset: 0 });
  });

  it('pages with limit, offset and hasMore', async () => {
    const first = await query({ select: ['timestamp'], limit: 2 });
    const second = await query({ select: ['timestamp'], limit: 2, offset: 2 });
    const last = await query({ select: ['timestamp'], limit: 2, offset: 4 });
    expect([first.body.hasMore, second.body.hasMore, last.body.hasMore]).toEqual([true, true, false]);
    expect(
      [...first.body.results, ...second.body.results, ...last.body.results].map((r: string[]) => r[0]),
    ).toEqual(newestFirst.map((e) => new Date(e.at).toISOString()));
  });

  it('groups by the other columns when an aggregate is selected; a merged person counts once', async () => {
    const res = await query({
      select: ['event', 'count()', 'count(DISTINCT person_id)', 'min(timestamp)', 'max(timestamp)'],
      orderBy: ['event ASC'],
    });
    expect(res.status).toBe(200);
    const expected = ['pageview', 'signup'].map((name) => {
      const of = EVENTS.filter((e) => e.event === name);
      const persons = new Set(of.map((e) => (e.distinctId === 'c' ? 'c' : 'p')));
      const times = of.map((e) => e.at).sort();
      return [
        name,
        of.length,
        persons.size,
        new Date(times[0]!).toISOString(),
        new Date(times.at(-1)!).toISOString(),
      ];
    });
    expect(res.body.results).toEqual(expected);
    expect(res.body.types).toEqual([
      'String',
      'UInt64',
      'UInt64',
      "DateTime64(6, 'UTC')",
      "DateTime64(6, 'UTC')",
    ]);
  });

  it('filters by event, properties, personId and a time window; reads person columns and coalesce', async () => {
    const chrome = await query({
      select: ['distinct_id'],
      event: 'pageview',
      properties: [{ key: '$browser', value: 'Chrome', operator: 'exact', type: 'event' }],
    });
    expect(chrome.body.results).toEqual([['c'], ['a']]);
    const person = await query({
      select: ['event', 'person.properties.email', 'person'],
      personId: personUuid,
    });
    expect(person.body.results.map((r: unknown[]) => r[0])).toEqual(
      newestFirst.filter((e) => e.distinctId !== 'c').map((e) => e.event),
    );
    expect(person.body.results[0][1]).toBe('a@example.com');
    expect(person.body.results[0][2]).toMatchObject({
      uuid: personUuid,
      properties: { email: 'a@example.com' },
    });
    const window = await query({
      select: ['event'],
      after: '2026-11-20T10:30:00Z',
      before: '2026-11-20T12:30:00Z',
    });
    expect([window.status, window.body.results ?? window.body]).toEqual([200, [['signup'], ['pageview']]]);
    const screen = await query({
      select: ['coalesce(properties.$current_url, properties.$screen_name) -- Url / Screen'],
      event: 'pageview',
      orderBy: ['coalesce(properties.$current_url, properties.$screen_name) -- Url / Screen ASC'],
    });
    expect(screen.body.columns).toEqual([
      'coalesce(properties.$current_url, properties.$screen_name) -- Url / Screen',
    ]);
    expect(screen.body.results.map((r: unknown[]) => r[0])).toEqual(['/a', '/b', 'Home', null]);
  });

  it('answers inside a DataTableNode as its source', async () => {
    const direct = await query({ select: ['event'] });
    const wrapped = await call(h, 'POST', `/api/projects/${f.teamA.id}/query/`, key, {
      query: {
        kind: 'DataTableNode',
        full: true,
        source: { kind: 'EventsQuery', select: ['event'], after: '2026-11-01' },
      },
    });
    expect(wrapped.status).toBe(200);
    expect(wrapped.body.results).toEqual(direct.body.results);
  });

  it('compiles select, where and orderBy as HogQL, as HogQLQuery does', async () => {
    const res = await query({
      select: ['event', 'toDate(timestamp)', 'count()'],
      where: ["event != 'signup'", 'properties.$browser IS NOT NULL'],
      orderBy: ['toDate(timestamp) DESC'],
    });
    expect(res.status).toBe(200);
    const kept = EVENTS.filter((e) => e.event !== 'signup' && e.props.$browser !== undefined);
    const byDay = new Map<string, number>();
    for (const e of kept) byDay.set(e.at.slice(0, 10), (byDay.get(e.at.slice(0, 10)) ?? 0) + 1);
    expect(res.body.types).toEqual(['String', 'Date', 'UInt64']);
    expect(res.body.results).toEqual(
      [...byDay].sort(([a], [b]) => b.localeCompare(a)).map(([day, n]) => ['pageview', day, n]),
    );
    // The same column through HogQLQuery means the same.
    const same = await call(h, 'POST', `/api/projects/${f.teamA.id}/query/`, key, {
      query: {
        kind: 'HogQLQuery',
        query:
          "SELECT event, toDate(timestamp), count() FROM events WHERE event != 'signup' AND properties.$browser IS NOT NULL GROUP BY event, toDate(timestamp) ORDER BY toDate(timestamp) DESC",
      },
    });
    expect(same.body.results).toEqual(res.body.results);
  });

  it('refuses what it does not serve with a 400 naming it', async () => {
    const unknown = await query({ select: ['event', 'sleep(1)'] });
    expect(unknown).toMatchObject({ status: 400, body: { attr: 'query.select.1' } });
    expect(unknown.body.detail).toMatch(/unknown function sleep/);
    const where = await query({ select: ['event'], where: ['event ='] });
    expect(where).toMatchObject({ status: 400, body: { attr: 'query.where.0' } });
    const aggregate = await query({ select: ['event'], where: ['count() > 1'] });
    expect(aggregate).toMatchObject({ status: 400, body: { attr: 'query.where.0' } });
    const order = await query({ select: ['event'], orderBy: ['nope DESC'] });
    expect(order).toMatchObject({ status: 400, body: { attr: 'query.orderBy.0' } });
    const limit = await query({ select: ['event'], limit: 1001 });
    expect(limit).toMatchObject({ status: 400, body: { attr: 'query.limit' } });
    const person = await query({ select: ['event'], personId: 'not-a-uuid' });
    expect(person).toMatchObject({ status: 400, body: { attr: 'query.personId' } });
  });
});
