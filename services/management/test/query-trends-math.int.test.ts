// TrendsQuery's other maths, filters and displays against answers computed here over the same
// events: property aggregates with ties and a non-numeric value skipped (sum, avg, min, max,
// median, p75), unique sessions and groups, weekly active persons over a rolling window, group
// property filters and breakdowns, several breakdowns at once, a formula over two series with a
// division by zero, the displays that answer totals, and the project's test account filters.
import { randomUUID } from 'node:crypto';
import { call, createKey, seed, startHarness, type Fixture, type Harness } from './helpers';

let h: Harness;
let f: Fixture;
let key: string;
let adminKey: string;

interface Ev {
  at: string;
  did: string;
  event: string;
  props: Record<string, unknown>;
  group?: string;
}
const EVENTS: Ev[] = [
  {
    at: '2026-11-10T10:00:00Z',
    did: 'a',
    event: 'purchase',
    props: { price: 10, $session_id: 's1' },
    group: 'acme',
  },
  {
    at: '2026-11-10T11:00:00Z',
    did: 'b',
    event: 'purchase',
    props: { price: 20, $session_id: 's1' },
    group: 'acme',
  },
  {
    at: '2026-11-10T12:00:00Z',
    did: 'c',
    event: 'purchase',
    props: { price: 'free', $session_id: 's2' },
    group: 'beta',
  },
  { at: '2026-11-11T10:00:00Z', did: 'c', event: 'purchase', props: { price: 20, $session_id: 's3' } },
  {
    at: '2026-11-11T11:00:00Z',
    did: 'd',
    event: 'purchase',
    props: { price: '20', $session_id: 's3' },
    group: 'beta',
  },
  { at: '2026-11-11T12:00:00Z', did: 'd', event: 'pageview', props: { $session_id: 's4' }, group: 'beta' },
  { at: '2026-11-13T12:00:00Z', did: 'e', event: 'purchase', props: { price: 5 } },
  { at: '2026-11-16T12:00:00Z', did: 'a', event: 'pageview', props: {} },
];
const PERSON: Record<string, string> = { a: 'p1', b: 'p1', c: 'c', d: 'd', e: 'e' };
const DAYS = ['2026-11-10', '2026-11-11', '2026-11-12', '2026-11-13'];
const range = { date_from: '2026-11-10', date_to: '2026-11-13' };

beforeAll(async () => {
  h = await startHarness();
  f = await seed(h.prisma);
  key = await createKey(h.prisma, f.alice.id, ['query:read']);
  adminKey = await createKey(h.prisma, f.adminA.id, ['project:write', 'query:read']);
  const person = await h.pool.query<{ id: string }>(
    `INSERT INTO persons (uuid, team_id, properties) VALUES ($1, $2, '{}') RETURNING id`,
    [randomUUID(), f.teamA.id],
  );
  for (const did of ['a', 'b'])
    await h.pool.query(
      `INSERT INTO person_distinct_ids (team_id, distinct_id, person_id) VALUES ($1, $2, $3)`,
      [f.teamA.id, did, person.rows[0]!.id],
    );
  for (const [groupKey, industry] of [
    ['acme', 'tech'],
    ['beta', 'retail'],
  ])
    await h.pool.query(
      `INSERT INTO groups (team_id, group_type_index, group_key, group_properties) VALUES ($1, 0, $2, $3)`,
      [f.teamA.id, groupKey, JSON.stringify({ industry })],
    );
  for (const e of EVENTS)
    await h.pool.query(
      `INSERT INTO events (uuid, team_id, event, distinct_id, timestamp, properties, group_0) VALUES ($1, $2, $3, $4, $5, $6, $7)`,
      [randomUUID(), f.teamA.id, e.event, e.did, e.at, JSON.stringify(e.props), e.group ?? null],
    );
});
afterAll(() => h.stop());

const query = (q: Record<string, unknown>) =>
  call(h, 'POST', `/api/projects/${f.teamA.id}/query/`, key, {
    query: { kind: 'TrendsQuery', dateRange: range, interval: 'day', ...q },
  });
const dayOf = (e: Ev) => e.at.slice(0, 10);

/** Postgres' percentile_cont: linear between the two nearest ranks. */
function quantile(values: number[], p: number): number {
  const s = [...values].sort((x, y) => x - y);
  const pos = p * (s.length - 1);
  const lo = Math.floor(pos);
  return s[lo]! + (s[Math.ceil(pos)]! - s[lo]!) * (pos - lo);
}
const prices = (days: string[]) =>
  EVENTS.filter((e) => e.event === 'purchase' && days.includes(dayOf(e)))
    .map((e) => e.props.price)
    .filter((p) => /^\d+$/.test(String(p)))
    .map(Number);
const REFERENCE: Record<string, (v: number[]) => number> = {
  sum: (v) => v.reduce((a, b) => a + b, 0),
  avg: (v) => v.reduce((a, b) => a + b, 0) / v.length,
  min: (v) => Math.min(...v),
  max: (v) => Math.max(...v),
  median: (v) => quantile(v, 0.5),
  p75: (v) => quantile(v, 0.75),
};

describe('TrendsQuery maths', () => {
  it.each(Object.keys(REFERENCE))(
    '%s of a numeric property per day: non-numeric values skipped, an empty day 0, ties kept',
    async (math) => {
      const res = await query({
        series: [{ kind: 'EventsNode', event: 'purchase', math, math_property: 'price' }],
      });
      expect(res.status).toBe(200);
      const expected = DAYS.map((d) => (prices([d]).length ? REFERENCE[math]!(prices([d])) : 0));
      expect(res.body.results[0].data).toEqual(expected);
      const bold = await query({
        series: [{ kind: 'EventsNode', event: 'purchase', math, math_property: 'price' }],
        trendsFilter: { display: 'BoldNumber' },
      });
      expect(bold.body.results[0].aggregated_value).toBeCloseTo(REFERENCE[math]!(prices(DAYS)), 10);
    },
  );

  it('unique sessions and unique groups per day', async () => {
    const sessions = await query({ series: [{ kind: 'EventsNode', event: null, math: 'unique_session' }] });
    expect(sessions.body.results[0].data).toEqual(
      DAYS.map(
        (d) =>
          new Set(EVENTS.filter((e) => dayOf(e) === d && e.props.$session_id).map((e) => e.props.$session_id))
            .size,
      ),
    );
    const groups = await query({
      series: [{ kind: 'EventsNode', event: null, math: 'unique_group', math_group_type_index: 0 }],
    });
    expect(groups.body.results[0].data).toEqual(
      DAYS.map((d) => new Set(EVENTS.filter((e) => dayOf(e) === d && e.group).map((e) => e.group)).size),
    );
  });

  it('weekly active persons: the 7 days ending with each day, a merged person once', async () => {
    const days = [
      '2026-11-10',
      '2026-11-11',
      '2026-11-12',
      '2026-11-13',
      '2026-11-14',
      '2026-11-15',
      '2026-11-16',
    ];
    const res = await query({
      series: [{ kind: 'EventsNode', event: null, math: 'weekly_active' }],
      dateRange: { date_from: '2026-11-10', date_to: '2026-11-16' },
    });
    expect(res.status).toBe(200);
    const expected = days.map((d) => {
      const end = Date.parse(`${d}T00:00:00Z`) + 86_400_000;
      return new Set(
        EVENTS.filter((e) => Date.parse(e.at) < end && Date.parse(e.at) >= end - 7 * 86_400_000).map(
          (e) => PERSON[e.did],
        ),
      ).size;
    });
    expect(res.body.results[0].data).toEqual(expected);
  });

  it('filters and breaks down by a group property', async () => {
    const tech = await query({
      series: [{ kind: 'EventsNode', event: null }],
      properties: [{ key: 'industry', value: 'tech', operator: 'exact', type: 'group', group_type_index: 0 }],
    });
    expect(tech.body.results[0].data).toEqual(
      DAYS.map((d) => EVENTS.filter((e) => dayOf(e) === d && e.group === 'acme').length),
    );
    const byIndustry = await query({
      series: [{ kind: 'EventsNode', event: null }],
      breakdownFilter: { breakdown: 'industry', breakdown_type: 'group', breakdown_group_type_index: 0 },
      trendsFilter: { display: 'ActionsPie' },
    });
    const totals = Object.fromEntries(
      byIndustry.body.results.map((r: { breakdown_value: string; aggregated_value: number }) => [
        r.breakdown_value,
        r.aggregated_value,
      ]),
    );
    const inRange = EVENTS.filter((e) => DAYS.includes(dayOf(e)));
    expect(totals).toEqual({
      tech: inRange.filter((e) => e.group === 'acme').length,
      retail: inRange.filter((e) => e.group === 'beta').length,
      $$_posthog_breakdown_null_$$: inRange.filter((e) => !e.group).length,
    });
    const missingIndex = await query({
      series: [{ kind: 'EventsNode' }],
      breakdownFilter: { breakdown: 'industry', breakdown_type: 'group' },
    });
    expect(missingIndex).toMatchObject({
      status: 400,
      body: { attr: 'query.breakdownFilter.breakdown_group_type_index' },
    });
  });

  it('breaks down by several properties at once', async () => {
    const res = await query({
      series: [{ kind: 'EventsNode', event: 'purchase' }],
      breakdownFilter: {
        breakdowns: [
          { property: '$session_id', type: 'event' },
          { property: 'industry', type: 'group', group_type_index: 0 },
        ],
      },
      trendsFilter: { display: 'ActionsTable' },
    });
    expect(res.status).toBe(200);
    const rows = res.body.results
      .map((r: { breakdown_value: string[]; aggregated_value: number }) => [
        r.breakdown_value.join('|'),
        r.aggregated_value,
      ])
      .sort();
    const NULL = '$$_posthog_breakdown_null_$$';
    expect(rows).toEqual(
      [
        ['s1|tech', 2],
        ['s2|retail', 1],
        [`s3|${NULL}`, 1],
        ['s3|retail', 1],
        [`${NULL}|${NULL}`, 1],
      ].sort(),
    );
  });

  it('a formula over two series, bucket by bucket, a division by zero 0', async () => {
    const res = await query({
      series: [
        { kind: 'EventsNode', event: 'purchase' },
        { kind: 'EventsNode', event: 'pageview' },
      ],
      trendsFilter: { formula: 'A / B * 100' },
    });
    expect(res.status).toBe(200);
    expect(res.body.results).toHaveLength(1);
    const count = (event: string, d: string) =>
      EVENTS.filter((e) => e.event === event && dayOf(e) === d).length;
    expect(res.body.results[0].data).toEqual(
      DAYS.map((d) => (count('pageview', d) === 0 ? 0 : (count('purchase', d) / count('pageview', d)) * 100)),
    );
    expect(res.body.results[0]).toMatchObject({ label: 'Formula (A / B * 100)', action: null });
    const bad = await query({ series: [{ kind: 'EventsNode' }], trendsFilter: { formula: 'A / C' } });
    expect(bad).toMatchObject({ status: 400, body: { attr: 'query.trendsFilter.formula' } });
    expect(bad.body.detail).toContain('position 5');
  });

  it('totals displays and the cumulative line answer the same numbers', async () => {
    const line = await query({ series: [{ kind: 'EventsNode', event: 'purchase' }] });
    const data = line.body.results[0].data as number[];
    for (const display of ['ActionsTable', 'ActionsPie', 'ActionsBarValue', 'BoldNumber']) {
      const res = await query({
        series: [{ kind: 'EventsNode', event: 'purchase' }],
        trendsFilter: { display },
      });
      expect([display, res.body.results[0].aggregated_value]).toEqual([
        display,
        data.reduce((a, b) => a + b, 0),
      ]);
    }
    const cumulative = await query({
      series: [{ kind: 'EventsNode', event: 'purchase' }],
      trendsFilter: { display: 'ActionsLineGraphCumulative' },
    });
    let sum = 0;
    expect(cumulative.body.results[0].data).toEqual(data.map((n) => (sum += n)));
  });

  it("applies the project's test account filters with filterTestAccounts, set by PATCH", async () => {
    const filters = [{ key: 'price', value: '5', operator: 'is_not', type: 'event' }];
    const bad = await call(h, 'PATCH', `/api/projects/${f.teamA.id}/`, adminKey, {
      test_account_filters: [{ key: 'price', operator: 'no_such_operator', value: 1 }],
    });
    expect(bad).toMatchObject({ status: 400, body: { attr: 'test_account_filters' } });
    const set = await call(h, 'PATCH', `/api/projects/${f.teamA.id}/`, adminKey, {
      test_account_filters: filters,
    });
    expect(set.status).toBe(200);
    expect(set.body.test_account_filters).toEqual(filters);
    const all = await query({
      series: [{ kind: 'EventsNode', event: 'purchase' }],
      filterTestAccounts: false,
    });
    const real = await query({
      series: [{ kind: 'EventsNode', event: 'purchase' }],
      filterTestAccounts: true,
    });
    expect(all.body.results[0].data).toEqual(
      DAYS.map((d) => EVENTS.filter((e) => e.event === 'purchase' && dayOf(e) === d).length),
    );
    expect(real.body.results[0].data).toEqual(
      DAYS.map(
        (d) => EVENTS.filter((e) => e.event === 'purchase' && dayOf(e) === d && e.props.price !== 5).length,
      ),
    );
  });

  it('refuses a property math without its property, and options it does not serve', async () => {
    const noProperty = await query({ series: [{ kind: 'EventsNode', math: 'sum' }] });
    expect(noProperty).toMatchObject({ status: 400, body: { attr: 'query.series.0.math_property' } });
    const smoothing = await query({
      series: [{ kind: 'EventsNode' }],
      trendsFilter: { smoothingIntervals: 7 },
    });
    expect(smoothing).toMatchObject({ status: 400, body: { attr: 'query.trendsFilter.smoothingIntervals' } });
    const hogql = await query({ series: [{ kind: 'EventsNode', math: 'hogql' }] });
    expect(hogql).toMatchObject({ status: 400, body: { attr: 'query.series.0.math' } });
  });
});
