// POST /query/ with PostHog's FunnelsQuery (and inside InsightVizNode) over a known set of
// events, each expected number worked out by hand below: a person whose two distinct ids were
// merged goes through the steps on both ids, an event exactly at the window's edge, steps done in
// reverse, strict and unordered order, an exclusion between steps, a breakdown attributed to the
// first step, conversion times, and the trends view.
import { randomUUID } from 'node:crypto';
import { call, createKey, seed, startHarness, type Fixture, type Harness } from './helpers';

let h: Harness;
let f: Fixture;
let key: string;

// Day 2026-11-10, UTC project. Persons: P1 = ids a and b (merged), c, d, e, g (no persons: each id
// counts as itself).
const T = (hour: number, minute = 0) => new Date(Date.UTC(2026, 10, 10, hour, minute)).toISOString();
const EVENTS: Array<[string, string, string, Record<string, unknown>]> = [
  // P1: view on id a (Chrome), signup on id b an hour later, pay two hours after that.
  ['a', 'view', T(1), { $browser: 'Chrome' }],
  ['b', 'signup', T(2), {}],
  ['b', 'pay', T(4), {}],
  // c: view (Safari), signup, and pay 2 days after the view: outside a 1-day window.
  ['c', 'view', T(3), { $browser: 'Safari' }],
  ['c', 'signup', T(5), {}],
  // d: signup before view (reverse), then nothing.
  ['d', 'signup', T(1), {}],
  ['d', 'view', T(2), { $browser: 'Chrome' }],
  // e: view (Chrome), an unrelated click, signup exactly 24 h later (at the window's edge), pay.
  ['e', 'view', T(6), { $browser: 'Chrome' }],
  ['e', 'click', T(7), {}],
  // g: view then 'cancel' (an exclusion between view and signup), then signup.
  ['g', 'view', T(8), { $browser: 'Firefox' }],
  ['g', 'cancel', T(9), {}],
  ['g', 'signup', T(10), {}],
];
const LATER: Array<[string, string, string, Record<string, unknown>]> = [
  ['c', 'pay', new Date(Date.UTC(2026, 10, 12, 3)).toISOString(), {}],
  ['e', 'signup', new Date(Date.UTC(2026, 10, 11, 6)).toISOString(), {}],
  ['e', 'pay', new Date(Date.UTC(2026, 10, 11, 7)).toISOString(), {}],
];

beforeAll(async () => {
  h = await startHarness();
  f = await seed(h.prisma);
  key = await createKey(h.prisma, f.alice.id, ['query:read']);
  const person = await h.pool.query<{ id: string }>(
    `INSERT INTO persons (uuid, team_id, properties) VALUES ($1, $2, '{"plan":"pro"}') RETURNING id`,
    [randomUUID(), f.teamA.id],
  );
  for (const did of ['a', 'b'])
    await h.pool.query(
      `INSERT INTO person_distinct_ids (team_id, distinct_id, person_id) VALUES ($1, $2, $3)`,
      [f.teamA.id, did, person.rows[0]!.id],
    );
  for (const [did, event, at, props] of [...EVENTS, ...LATER])
    await h.pool.query(
      `INSERT INTO events (uuid, team_id, event, distinct_id, timestamp, properties) VALUES ($1, $2, $3, $4, $5, $6)`,
      [randomUUID(), f.teamA.id, event, did, at, JSON.stringify(props)],
    );
});
afterAll(() => h.stop());

const steps = (...events: string[]) => events.map((event) => ({ kind: 'EventsNode', event }));
const funnel = (q: Record<string, unknown>) =>
  call(h, 'POST', `/api/projects/${f.teamA.id}/query/`, key, {
    query: {
      kind: 'FunnelsQuery',
      dateRange: { date_from: '2026-11-10', date_to: '2026-11-13' },
      ...q,
    },
  });
const counts = (results: Array<{ count: number }>) => results.map((s) => s.count);

describe('FunnelsQuery', () => {
  it('counts each person once through ordered steps within the window, a merged person across ids', async () => {
    const res = await funnel({
      series: steps('view', 'signup', 'pay'),
      funnelsFilter: { funnelWindowInterval: 1, funnelWindowIntervalUnit: 'day' },
    });
    expect(res.status).toBe(200);
    // view: P1, c, d, e, g = 5. signup after view within 1 day: P1 (2h), c (2h), e (24h, the
    // edge), g (2h) = 4; d signed up before viewing. pay within 1 day of the view: P1 (3h); c
    // paid 48 h after, e 25 h after.
    expect(counts(res.body.results)).toEqual([5, 4, 1]);
    expect(res.body.results[0]).toMatchObject({
      action_id: 'view',
      name: 'view',
      order: 0,
      type: 'events',
      average_conversion_time: null,
      median_conversion_time: null,
    });
    // Seconds from view to signup: P1 3,600, c 7,200, e 86,400, g 7,200.
    expect(res.body.results[1].average_conversion_time).toBe((3600 + 7200 + 86400 + 7200) / 4);
    expect(res.body.results[1].median_conversion_time).toBe(7200);
    expect(res.body.results[2]).toMatchObject({
      average_conversion_time: 7200,
      median_conversion_time: 7200,
    });
  });

  it('a longer window lets the later payments count', async () => {
    const res = await funnel({
      series: steps('view', 'signup', 'pay'),
      funnelsFilter: { funnelWindowInterval: 3, funnelWindowIntervalUnit: 'day' },
    });
    expect(counts(res.body.results)).toEqual([5, 4, 3]);
  });

  it('strict order: an event between two steps breaks them; unordered: any order counts', async () => {
    const strict = await funnel({
      series: steps('view', 'signup'),
      funnelsFilter: { funnelOrderType: 'strict', funnelWindowInterval: 2, funnelWindowIntervalUnit: 'day' },
    });
    // e clicked between view and signup; g cancelled between them; d's next event after view is none.
    expect(counts(strict.body.results)).toEqual([5, 2]);
    const unordered = await funnel({
      series: steps('view', 'signup'),
      funnelsFilter: {
        funnelOrderType: 'unordered',
        funnelWindowInterval: 2,
        funnelWindowIntervalUnit: 'day',
      },
    });
    // Unordered, d converts too: signup, then view an hour later.
    expect(counts(unordered.body.results)).toEqual([5, 5]);
    expect(unordered.body.results[1]).toMatchObject({ action_id: null, name: 'Completed 2 steps' });
  });

  it('strict order with a person property on a step: only that person, through the steps', async () => {
    const res = await funnel({
      series: [
        {
          kind: 'EventsNode',
          event: 'view',
          properties: [{ key: 'plan', value: 'pro', operator: 'exact', type: 'person' }],
        },
        { kind: 'EventsNode', event: 'signup' },
      ],
      funnelsFilter: { funnelOrderType: 'strict', funnelWindowInterval: 2, funnelWindowIntervalUnit: 'day' },
    });
    expect(res.status).toBe(200);
    // Only P1 is on plan pro: view on id a, then signup on id b.
    expect(counts(res.body.results)).toEqual([1, 1]);
  });

  it('drops a person whose attempt has an exclusion event between its steps', async () => {
    const res = await funnel({
      series: steps('view', 'signup'),
      funnelsFilter: {
        funnelWindowInterval: 2,
        funnelWindowIntervalUnit: 'day',
        exclusions: [{ kind: 'EventsNode', event: 'cancel', funnelFromStep: 0, funnelToStep: 1 }],
      },
    });
    expect(counts(res.body.results)).toEqual([4, 3]);
  });

  it("breaks down by the first step's event property, values by their first-step count", async () => {
    const res = await funnel({
      series: steps('view', 'signup'),
      funnelsFilter: { funnelWindowInterval: 2, funnelWindowIntervalUnit: 'day' },
      breakdownFilter: { breakdown: '$browser', breakdown_type: 'event' },
    });
    expect(res.status).toBe(200);
    const byValue = Object.fromEntries(
      res.body.results.map((s: Array<{ breakdown_value: string[]; count: number }>) => [
        s[0]!.breakdown_value[0],
        counts(s),
      ]),
    );
    // Chrome: P1, d, e (signup: P1, e); Safari: c (signup); Firefox: g (signup).
    expect(byValue).toEqual({ Chrome: [3, 2], Safari: [1, 1], Firefox: [1, 1] });
    expect(res.body.results[0][0].breakdown).toEqual(['Chrome']);
  });

  it('breaks down by a person property: ids without a person are the null value', async () => {
    const res = await funnel({
      series: steps('view', 'signup'),
      funnelsFilter: { funnelWindowInterval: 2, funnelWindowIntervalUnit: 'day' },
      breakdownFilter: { breakdown: 'plan', breakdown_type: 'person' },
    });
    const byValue = Object.fromEntries(
      res.body.results.map((s: Array<{ breakdown_value: string[]; count: number }>) => [
        s[0]!.breakdown_value[0],
        counts(s),
      ]),
    );
    expect(byValue).toEqual({ $$_posthog_breakdown_null_$$: [4, 3], pro: [1, 1] });
  });

  it('answers the trends view: the conversion rate per day of the first step', async () => {
    const res = await call(h, 'POST', `/api/projects/${f.teamA.id}/query/`, key, {
      query: {
        kind: 'InsightVizNode',
        source: {
          kind: 'FunnelsQuery',
          series: steps('view', 'signup'),
          dateRange: { date_from: '2026-11-10', date_to: '2026-11-11' },
          interval: 'day',
          funnelsFilter: {
            funnelVizType: 'trends',
            funnelWindowInterval: 2,
            funnelWindowIntervalUnit: 'day',
          },
        },
      },
    });
    expect(res.status).toBe(200);
    const [series] = res.body.results;
    expect(series.days).toEqual(['2026-11-10', '2026-11-11']);
    // All five viewed on the 10th; four of them signed up within the window.
    expect(series.data).toEqual([80, 0]);
  });

  it('refuses what it does not serve, naming it', async () => {
    const one = await funnel({ series: steps('view') });
    expect(one).toMatchObject({ status: 400, body: { attr: 'query.series' } });
    const exclusion = await funnel({
      series: steps('view', 'signup'),
      funnelsFilter: { exclusions: [{ kind: 'EventsNode', event: 'x', funnelFromStep: 1, funnelToStep: 1 }] },
    });
    expect(exclusion).toMatchObject({ status: 400, body: { attr: 'query.funnelsFilter.exclusions.0' } });
    const viz = await funnel({
      series: steps('view', 'signup'),
      funnelsFilter: { funnelVizType: 'time_to_convert' },
    });
    expect(viz).toMatchObject({ status: 400, body: { attr: 'query.funnelsFilter.funnelVizType' } });
  });
});
