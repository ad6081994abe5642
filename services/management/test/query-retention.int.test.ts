// POST /query/ with PostHog's RetentionQuery over a known set of events in America/New_York,
// across the end of daylight saving time (2026-11-01), each expected number worked out by hand:
// daily cohorts first time and recurring, a person merged from two ids, a person whose first
// target event is before the range (not a first-time cohort member), weekly cohorts, a breakdown
// by a person property, and the 400s.
import { randomUUID } from 'node:crypto';
import { call, createKey, seed, startHarness, type Fixture, type Harness } from './helpers';

let h: Harness;
let f: Fixture;
let key: string;
const TZ = 'America/New_York';

// Local New York times: Oct 31 is EDT (UTC-4), Nov 1 from 02:00 and after EST (UTC-5).
const local = (day: string, hour: number) => {
  const offset = day < '2026-11-01' || (day === '2026-11-01' && hour < 1) ? 4 : 5;
  const [y, m, d] = day.split('-').map(Number);
  return new Date(Date.UTC(y!, m! - 1, d!, hour + offset)).toISOString();
};
const EVENTS: Array<[string, string, string]> = [
  // p1 = ids a and b: signs up Oct 31 (as a), returns Nov 1 (as b, 23:30 local, after the
  // clocks went back) and Nov 3.
  ['a', 'signup', local('2026-10-31', 9)],
  ['b', 'visit', local('2026-11-01', 23)],
  ['a', 'visit', local('2026-11-03', 8)],
  // c: first signup before the range (Oct 20), signs up again Oct 31, returns Nov 2.
  ['c', 'signup', local('2026-10-20', 9)],
  ['c', 'signup', local('2026-10-31', 10)],
  ['c', 'visit', local('2026-11-02', 9)],
  // d: signs up Nov 1 at 00:30 local (still EDT), returns Nov 1 later (same day) and Nov 2.
  ['d', 'signup', local('2026-11-01', 0)],
  ['d', 'visit', local('2026-11-01', 12)],
  ['d', 'visit', local('2026-11-02', 12)],
];

beforeAll(async () => {
  h = await startHarness();
  f = await seed(h.prisma);
  key = await createKey(h.prisma, f.alice.id, ['query:read']);
  await h.prisma.team.update({ where: { id: f.teamA.id }, data: { timezone: TZ } });
  const person = await h.pool.query<{ id: string }>(
    `INSERT INTO persons (uuid, team_id, properties) VALUES ($1, $2, '{"plan":"pro"}') RETURNING id`,
    [randomUUID(), f.teamA.id],
  );
  for (const did of ['a', 'b'])
    await h.pool.query(
      `INSERT INTO person_distinct_ids (team_id, distinct_id, person_id) VALUES ($1, $2, $3)`,
      [f.teamA.id, did, person.rows[0]!.id],
    );
  for (const [did, event, at] of EVENTS)
    await h.pool.query(
      `INSERT INTO events (uuid, team_id, event, distinct_id, timestamp, properties) VALUES ($1, $2, $3, $4, $5, '{}')`,
      [randomUUID(), f.teamA.id, event, did, at],
    );
});
afterAll(() => h.stop());

const retention = (retentionFilter: Record<string, unknown>, extra: Record<string, unknown> = {}) =>
  call(h, 'POST', `/api/projects/${f.teamA.id}/query/`, key, {
    query: {
      kind: 'RetentionQuery',
      dateRange: { date_from: '2026-10-31', date_to: '2026-11-03' },
      retentionFilter: {
        targetEntity: { id: 'signup', type: 'events' },
        returningEntity: { id: 'visit', type: 'events' },
        totalIntervals: 4,
        ...retentionFilter,
      },
      ...extra,
    },
  });
const grid = (results: Array<{ values: Array<{ count: number }> }>) =>
  results.map((r) => r.values.map((v) => v.count));

describe('RetentionQuery', () => {
  it('daily, first time: cohorts by the first signup ever, in local days across the DST change', async () => {
    const res = await retention({ retentionType: 'retention_first_time', period: 'Day' });
    expect(res.status).toBe(200);
    expect(res.body.results.map((r: { date: string; label: string }) => [r.date, r.label])).toEqual([
      ['2026-10-31T00:00:00-04:00', 'Day 0'],
      ['2026-11-01T00:00:00-04:00', 'Day 1'],
      ['2026-11-02T00:00:00-05:00', 'Day 2'],
      ['2026-11-03T00:00:00-05:00', 'Day 3'],
    ]);
    // Oct 31: p1 only (c's first signup was Oct 20): back Nov 1 (day 1) and Nov 3 (day 3).
    // Nov 1: d, back Nov 2 (day 1; Nov 1 itself is day 0).
    expect(grid(res.body.results)).toEqual(
      [[1, 1, 0, 1], [1, 1, 0, 0], [0, 0], [0]].map((row, i) => row.slice(0, 4 - i)),
    );
    expect(res.body.results[0].values[1]).toEqual({ count: 1, label: 'Day 1' });
  });

  it('daily, recurring: every day a person signed up is a cohort', async () => {
    const res = await retention({ retentionType: 'retention_recurring', period: 'Day' });
    // Oct 31: p1 and c; p1 back on day 1 and 3, c on day 2.
    expect(grid(res.body.results)).toEqual([[2, 1, 1, 1], [1, 1, 0], [0, 0], [0]]);
  });

  it('weekly cohorts start on Sunday', async () => {
    const res = await retention(
      { retentionType: 'retention_recurring', period: 'Week', totalIntervals: 2 },
      { dateRange: { date_from: '2026-10-25', date_to: '2026-11-01' } },
    );
    expect(res.status).toBe(200);
    expect(res.body.results.map((r: { date: string }) => r.date)).toEqual([
      '2026-10-25T00:00:00-04:00',
      '2026-11-01T00:00:00-04:00',
    ]);
    // Week of Oct 25: p1 and c signed up (c twice, Oct 20 is the week before), both back the
    // week of Nov 1. Week of Nov 1: d; its visits are that same week.
    expect(grid(res.body.results)).toEqual([[2, 2], [1]]);
  });

  it('breaks down by a person property: ids without a person are the null value', async () => {
    const res = await retention(
      { retentionType: 'retention_recurring', period: 'Day', totalIntervals: 2 },
      { breakdownFilter: { breakdown: 'plan', breakdown_type: 'person' } },
    );
    expect(res.status).toBe(200);
    const rows = res.body.results.map((r: { breakdown_value: string; values: Array<{ count: number }> }) => [
      r.breakdown_value,
      r.values.map((v) => v.count),
    ]);
    expect(rows).toEqual([
      ['$$_posthog_breakdown_null_$$', [1, 0]],
      ['$$_posthog_breakdown_null_$$', [1, 1]],
      ['$$_posthog_breakdown_null_$$', [0, 0]],
      ['$$_posthog_breakdown_null_$$', [0]],
      ['pro', [1, 1]],
      ['pro', [0, 0]],
      ['pro', [0, 0]],
      ['pro', [0]],
    ]);
  });

  it('refuses what it does not serve, naming it', async () => {
    const actions = await retention({ targetEntity: { id: 1, type: 'actions' } });
    expect(actions.status).toBe(400);
    expect(actions.body.attr).toMatch(/^query\.retentionFilter\.targetEntity/);
    const period = await retention({ period: 'Year' });
    expect(period).toMatchObject({ status: 400, body: { attr: 'query.retentionFilter.period' } });
  });
});
