// POST /api/projects/:id/query/ with TrendsQuery against a reference computed here, in plain
// JavaScript, over the same events: a project in America/New_York across the end of daylight
// saving time (2026-11-01), events exactly on local midnights, a person whose two distinct ids
// were merged (counted once by dau), an id with no person, and the 400s for what is not served.
import { randomUUID } from 'node:crypto';
import { call, createKey, seed, startHarness, type Fixture, type Harness } from './helpers';

let h: Harness;
let f: Fixture;
let key: string;
const TZ = 'America/New_York';

interface Ev {
  event: string;
  distinctId: string;
  at: string; // UTC ISO
  browser?: string;
}

// Local midnights in New York: 2026-10-31 00:00 EDT = 04:00Z, 2026-11-01 00:00 EDT = 04:00Z,
// 2026-11-02 00:00 EST = 05:00Z.
const EVENTS: Ev[] = [
  { event: 'pageview', distinctId: 'a', at: '2026-10-31T03:59:59Z' }, // Oct 30 local
  { event: 'pageview', distinctId: 'a', at: '2026-10-31T04:00:00Z', browser: 'Chrome' }, // Oct 31, on the edge
  { event: 'pageview', distinctId: 'b', at: '2026-10-31T12:00:00Z', browser: 'Firefox' }, // Oct 31, b merged into a's person
  { event: 'signup', distinctId: 'c', at: '2026-10-31T13:00:00Z', browser: 'Chrome' }, // Oct 31, no person
  { event: 'pageview', distinctId: 'c', at: '2026-11-01T05:30:00Z', browser: 'Chrome' }, // Nov 1, 01:30 EDT
  { event: 'pageview', distinctId: 'c', at: '2026-11-01T06:30:00Z', browser: 'Safari' }, // Nov 1, 01:30 EST (repeated hour)
  { event: 'pageview', distinctId: 'b', at: '2026-11-02T04:59:59Z', browser: 'Edge' }, // Nov 1, 23:59:59 EST
  { event: 'pageview', distinctId: 'a', at: '2026-11-02T05:00:00Z', browser: 'Safari' }, // Nov 2, on the edge
  { event: 'pageview', distinctId: 'd', at: '2026-11-04T12:00:00Z' }, // after the range
];
const PERSON_OF: Record<string, string> = { a: 'p1', b: 'p1' };

function localDay(iso: string): string {
  return new Intl.DateTimeFormat('en-CA', {
    timeZone: TZ,
    year: 'numeric',
    month: '2-digit',
    day: '2-digit',
  }).format(new Date(iso));
}

/** The reference: per local day from..to, events (total) or distinct persons (dau). */
function reference(
  days: string[],
  event: string | null,
  math: 'total' | 'dau',
  keep: (e: Ev) => boolean = () => true,
): number[] {
  return days.map((day) => {
    const on = EVENTS.filter(
      (e) => localDay(e.at) === day && (event === null || e.event === event) && keep(e),
    );
    if (math === 'total') return on.length;
    return new Set(on.map((e) => PERSON_OF[e.distinctId] ?? `d:${e.distinctId}`)).size;
  });
}

beforeAll(async () => {
  h = await startHarness();
  f = await seed(h.prisma);
  key = await createKey(h.prisma, f.alice.id, ['query:read']);
  await h.prisma.team.update({ where: { id: f.teamA.id }, data: { timezone: TZ } });
  const person = await h.pool.query<{ id: string; uuid: string }>(
    `INSERT INTO persons (uuid, team_id, properties) VALUES ($1, $2, '{"plan":"pro"}') RETURNING id, uuid`,
    [randomUUID(), f.teamA.id],
  );
  for (const did of ['a', 'b'])
    await h.pool.query(
      `INSERT INTO person_distinct_ids (team_id, distinct_id, person_id) VALUES ($1, $2, $3)`,
      [f.teamA.id, did, person.rows[0]!.id],
    );
  for (const e of EVENTS)
    await h.pool.query(
      `INSERT INTO events (uuid, team_id, event, distinct_id, timestamp, properties) VALUES ($1, $2, $3, $4, $5, $6)`,
      [
        randomUUID(),
        f.teamA.id,
        e.event,
        e.distinctId,
        e.at,
        JSON.stringify(e.browser ? { $browser: e.browser } : {}),
      ],
    );
});
afterAll(() => h.stop());

const query = (q: Record<string, unknown>) =>
  call(h, 'POST', `/api/projects/${f.teamA.id}/query/`, key, { query: { kind: 'TrendsQuery', ...q } });

const DAYS = ['2026-10-30', '2026-10-31', '2026-11-01', '2026-11-02', '2026-11-03'];
const range = { date_from: '2026-10-30', date_to: '2026-11-03' };

describe('TrendsQuery', () => {
  it.each([
    [null, 'total'],
    [null, 'dau'],
    ['pageview', 'total'],
    ['pageview', 'dau'],
    ['signup', 'total'],
  ] as const)(
    'event %s, math %s: daily buckets in the project time zone match the reference',
    async (event, math) => {
      const res = await query({
        series: [{ kind: 'EventsNode', event, math }],
        interval: 'day',
        dateRange: range,
      });
      expect(res.status).toBe(200);
      const [series] = res.body.results;
      expect(series.days).toEqual(DAYS);
      expect(series.labels).toEqual(['30-Oct-2026', '31-Oct-2026', '1-Nov-2026', '2-Nov-2026', '3-Nov-2026']);
      expect(series.data).toEqual(reference(DAYS, event, math));
      expect(series.count).toBe(series.data.reduce((a: number, b: number) => a + b, 0));
      expect(series.action).toMatchObject({ type: 'events', math, name: event ?? 'All events' });
      expect(res.body).toMatchObject({ hasMore: false, is_cached: false, timezone: TZ });
      expect(res.body.resolved_date_range).toEqual({
        date_from: '2026-10-30T00:00:00-04:00',
        date_to: '2026-11-03T23:59:59-05:00',
      });
    },
  );

  it('counts a merged person once over the whole range for a BoldNumber of dau', async () => {
    const res = await query({
      series: [{ kind: 'EventsNode', event: null, math: 'dau' }],
      dateRange: range,
      trendsFilter: { display: 'BoldNumber' },
    });
    expect(res.status).toBe(200);
    // a and b are one person, c is itself: 2 over the range, though the days add up to more.
    expect(res.body.results[0].aggregated_value).toBe(2);
    expect(res.body.results[0].count).toBeGreaterThan(2);
  });

  it('buckets by wall-clock hour, the repeated 01:00 of the DST change in one bucket', async () => {
    const res = await query({
      series: [{ kind: 'EventsNode', event: 'pageview' }],
      interval: 'hour',
      dateRange: { date_from: '2026-11-01 00:00', date_to: '2026-11-01 03:00' },
    });
    expect(res.status).toBe(200);
    expect(res.body.results[0].days).toEqual([
      '2026-11-01 00:00:00',
      '2026-11-01 01:00:00',
      '2026-11-01 02:00:00',
      '2026-11-01 03:00:00',
    ]);
    expect(res.body.results[0].data).toEqual([0, 2, 0, 0]);
  });

  it('starts weeks on Sunday, and answers a relative range up to now', async () => {
    const weekly = await query({
      series: [{ kind: 'EventsNode', event: null }],
      interval: 'week',
      dateRange: range,
    });
    expect(weekly.body.results[0].days).toEqual(['2026-10-25', '2026-11-01']);
    expect(weekly.body.results[0].data).toEqual([4, 4]);
    const recent = await query({
      series: [{ kind: 'EventsNode', event: null }],
      dateRange: { date_from: '-7d' },
    });
    expect(recent.status).toBe(200);
    expect(recent.body.results[0].days).toHaveLength(8);
  });

  it.each(['total', 'dau'] as const)(
    'breaks down by an event property (%s): the top values by the range, then the rest as other',
    async (math) => {
      const res = await query({
        series: [{ kind: 'EventsNode', event: 'pageview', math }],
        dateRange: range,
        breakdownFilter: { breakdown: '$browser', breakdown_type: 'event', breakdown_limit: 2 },
        trendsFilter: { display: 'BoldNumber' },
      });
      expect(res.status).toBe(200);
      const values = res.body.results.map((r: { breakdown_value: string }) => r.breakdown_value);
      // pageviews in range: Chrome 2, Safari 2, Firefox 1, Edge 1, none 1 (the first a).
      expect(values).toEqual(['Chrome', 'Safari', '$$_posthog_breakdown_other_$$']);
      const isTop = (e: Ev) => e.browser === 'Chrome' || e.browser === 'Safari';
      const expected = [
        reference(DAYS, 'pageview', math, (e) => e.browser === 'Chrome'),
        reference(DAYS, 'pageview', math, (e) => e.browser === 'Safari'),
        reference(DAYS, 'pageview', math, (e) => !isTop(e)),
      ];
      expect(res.body.results.map((r: { data: number[] }) => r.data)).toEqual(expected);
      if (math === 'dau') {
        // Other: a (no browser, Oct 30), b (Firefox, Edge) are one person, so 1 over the range.
        expect(res.body.results[2].aggregated_value).toBe(1);
      }
    },
  );

  it('filters by event properties on the query and on a series', async () => {
    const res = await query({
      series: [
        {
          kind: 'EventsNode',
          event: null,
          properties: [{ key: '$browser', value: 'chrome', operator: 'exact', type: 'event' }],
        },
      ],
      properties: [{ key: '$browser', operator: 'is_set', type: 'event' }],
      dateRange: range,
    });
    expect(res.status).toBe(200);
    expect(res.body.results[0].data).toEqual(reference(DAYS, null, 'total', (e) => e.browser === 'Chrome'));
    const bad = await query({
      series: [{ kind: 'EventsNode' }],
      properties: [{ key: '$browser', operator: 'no_such_operator', value: 1, type: 'event' }],
    });
    expect(bad).toMatchObject({ status: 400, body: { attr: 'query.properties' } });
  });

  it('filters and breaks down by person properties (the merged person has plan pro, c has no person)', async () => {
    const pro = await query({
      series: [{ kind: 'EventsNode', event: null }],
      properties: [{ key: 'plan', value: 'pro', operator: 'exact', type: 'person' }],
      dateRange: range,
    });
    expect(pro.status).toBe(200);
    expect(pro.body.results[0].data).toEqual(
      reference(DAYS, null, 'total', (e) => PERSON_OF[e.distinctId] === 'p1'),
    );
    const byPlan = await query({
      series: [{ kind: 'EventsNode', event: null, math: 'dau' }],
      dateRange: range,
      breakdownFilter: { breakdown: 'plan', breakdown_type: 'person' },
    });
    expect(byPlan.status).toBe(200);
    const byValue = Object.fromEntries(
      byPlan.body.results.map((r: { breakdown_value: string; data: number[] }) => [
        r.breakdown_value,
        r.data,
      ]),
    );
    expect(byValue).toEqual({
      pro: reference(DAYS, null, 'dau', (e) => PERSON_OF[e.distinctId] === 'p1'),
      $$_posthog_breakdown_null_$$: reference(
        DAYS,
        null,
        'dau',
        (e) => PERSON_OF[e.distinctId] === undefined,
      ),
    });
  });

  it('compares with the previous period of the same length', async () => {
    const res = await query({
      series: [{ kind: 'EventsNode', event: null }],
      dateRange: { date_from: '2026-11-01', date_to: '2026-11-02' },
      compareFilter: { compare: true },
    });
    expect(res.status).toBe(200);
    const [current, previous] = res.body.results;
    expect(current).toMatchObject({
      compare: true,
      compare_label: 'current',
      days: ['2026-11-01', '2026-11-02'],
    });
    expect(previous).toMatchObject({
      compare: true,
      compare_label: 'previous',
      days: ['2026-10-30', '2026-10-31'],
    });
    expect(current.data).toEqual(reference(['2026-11-01', '2026-11-02'], null, 'total'));
    expect(previous.data).toEqual(reference(['2026-10-30', '2026-10-31'], null, 'total'));
  });

  it('refuses what it does not serve with a 400 naming it, never ignoring it', async () => {
    const paths = await call(h, 'POST', `/api/projects/${f.teamA.id}/query/`, key, {
      query: { kind: 'PathsQuery', series: [] },
    });
    expect(paths.status).toBe(400);
    expect(paths.body).toMatchObject({ attr: 'query.kind', code: 'unsupported_query_kind' });
    expect(paths.body.detail).toContain('TrendsQuery');

    const compareTo = await query({ series: [{ kind: 'EventsNode' }], compareFilter: { compare_to: '-1w' } });
    expect(compareTo.status).toBe(400);
    expect(compareTo.body.attr).toBe('query.compareFilter.compare_to');

    const math = await query({ series: [{ kind: 'EventsNode', math: 'hogql' }] });
    expect(math.status).toBe(400);
    expect(math.body.attr).toBe('query.series.0.math');

    const badDate = await query({ series: [{ kind: 'EventsNode' }], dateRange: { date_from: '2026-02-30' } });
    expect(badDate).toMatchObject({ status: 400, body: { attr: 'dateRange.date_from' } });

    const tooMany = await query({
      series: [{ kind: 'EventsNode' }],
      interval: 'hour',
      dateRange: { date_from: '2000-01-01', date_to: '2026-01-01' },
    });
    expect(tooMany).toMatchObject({ status: 400, body: { attr: 'interval' } });

    // PostHog's query models forbid unknown fields; a known one that would change the answer
    // is refused too; `async` (PostHog's older spelling) is answered as blocking.
    const series = { kind: 'TrendsQuery', series: [{ kind: 'EventsNode' }] };
    const unknown = await call(h, 'POST', `/api/projects/${f.teamA.id}/query/`, key, {
      query: series,
      colour: 1,
    });
    expect(unknown).toMatchObject({ status: 400, body: { attr: 'colour' } });
    const override = await call(h, 'POST', `/api/projects/${f.teamA.id}/query/`, key, {
      query: series,
      filters_override: { date_from: '-7d' },
    });
    expect(override).toMatchObject({ status: 400, body: { attr: 'filters_override' } });
    const asynchronous = await call(h, 'POST', `/api/projects/${f.teamA.id}/query/`, key, {
      query: series,
      async: true,
    });
    expect(asynchronous.status).toBe(200);
  });

  it("answers a query wrapped the way PostHog's clients send it as the query in its source", async () => {
    const inner = { kind: 'TrendsQuery', series: [{ kind: 'EventsNode', event: null }], dateRange: range };
    const direct = await call(h, 'POST', `/api/projects/${f.teamA.id}/query/`, key, { query: inner });
    for (const wrapper of ['InsightVizNode', 'DataVisualizationNode'])
      for (const extra of [{}, { full: true, showHeader: false }]) {
        const wrapped = await call(h, 'POST', `/api/projects/${f.teamA.id}/query/`, key, {
          query: { kind: wrapper, source: inner, ...extra },
        });
        expect(wrapped.status).toBe(200);
        expect(wrapped.body.results).toEqual(direct.body.results);
      }
    const unserved = await call(h, 'POST', `/api/projects/${f.teamA.id}/query/`, key, {
      query: { kind: 'DataTableNode', source: { kind: 'PathsQuery' } },
    });
    expect(unserved).toMatchObject({ status: 400, body: { attr: 'query.source.kind' } });
    const empty = await call(h, 'POST', `/api/projects/${f.teamA.id}/query/`, key, {
      query: { kind: 'InsightVizNode' },
    });
    expect(empty).toMatchObject({ status: 400, body: { attr: 'query.source' } });
  });

  it('needs query:read, and sees only projects the key can read', async () => {
    const other = await createKey(h.prisma, f.alice.id, ['project:read']);
    const denied = await call(h, 'POST', `/api/projects/${f.teamA.id}/query/`, other, {
      query: { kind: 'TrendsQuery', series: [{ kind: 'EventsNode' }] },
    });
    expect(denied.status).toBe(403);
    const foreign = await call(h, 'POST', `/api/projects/${f.teamB.id}/query/`, key, {
      query: { kind: 'TrendsQuery', series: [{ kind: 'EventsNode' }] },
    });
    expect(foreign.status).toBe(404);
  });
});
