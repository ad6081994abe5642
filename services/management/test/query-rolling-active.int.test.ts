// weekly_active and monthly_active by day are computed in one pass over the events (each person's
// active days, and where their coverage of the rolling windows starts and ends). Against a
// reference computed here over the same events: random days over two months in New York (across
// the end of daylight saving time), distinct ids merged into persons and ids with no person, with
// and without a breakdown, and unique sessions counted the same two-level way.
import { randomUUID } from 'node:crypto';
import { prng } from '@sett/testing';
import { call, createKey, seed, startHarness, type Fixture, type Harness } from './helpers';

let h: Harness;
let f: Fixture;
let key: string;
const TZ = 'America/New_York';

interface Ev {
  did: string;
  at: number;
  browser: string | null;
  session: string;
}

const next = prng(3);
const START = Date.parse('2026-10-01T12:00:00Z');
const BROWSERS = ['Chrome', 'Safari', 'Firefox', null];
const EVENTS: Ev[] = Array.from({ length: 1500 }, () => ({
  did: `d${Math.floor(next() ** 2 * 120)}`,
  at: START + Math.floor(next() * 60 * 86_400) * 1000,
  browser: BROWSERS[Math.floor(next() * BROWSERS.length)]!,
  session: `s${Math.floor(next() * 400)}`,
}));
// d0..d39 belong to 20 persons (two ids each); the rest have no person.
const personOf = (did: string) => {
  const n = Number(did.slice(1));
  return n < 40 ? `p${Math.floor(n / 2)}` : `d:${did}`;
};

const dayFormat = new Intl.DateTimeFormat('en-CA', {
  timeZone: TZ,
  year: 'numeric',
  month: '2-digit',
  day: '2-digit',
});
const localDay = new Map(EVENTS.map((e) => [e, dayFormat.format(new Date(e.at))]));
const addDays = (day: string, n: number) => {
  const d = new Date(`${day}T00:00:00Z`);
  d.setUTCDate(d.getUTCDate() + n);
  return d.toISOString().slice(0, 10);
};

function reference(days: string[], window: number, keep: (e: Ev) => boolean, key: (e: Ev) => string) {
  return days.map((day) => {
    const first = addDays(day, -(window - 1));
    return new Set(
      EVENTS.filter((e) => {
        const d = localDay.get(e)!;
        return d >= first && d <= day && keep(e);
      }).map(key),
    ).size;
  });
}

beforeAll(async () => {
  h = await startHarness();
  f = await seed(h.prisma);
  key = await createKey(h.prisma, f.alice.id, ['query:read']);
  await h.prisma.team.update({ where: { id: f.teamA.id }, data: { timezone: TZ } });
  for (let p = 0; p < 20; p++) {
    const person = await h.pool.query<{ id: string }>(
      `INSERT INTO persons (uuid, team_id) VALUES ($1, $2) RETURNING id`,
      [randomUUID(), f.teamA.id],
    );
    for (const did of [`d${2 * p}`, `d${2 * p + 1}`])
      await h.pool.query(
        `INSERT INTO person_distinct_ids (team_id, distinct_id, person_id) VALUES ($1, $2, $3)`,
        [f.teamA.id, did, person.rows[0]!.id],
      );
  }
  await h.pool.query(
    `INSERT INTO events (uuid, team_id, event, distinct_id, timestamp, properties)
     SELECT gen_random_uuid(), $1, 'pageview', d, t, p
       FROM unnest($2::text[], $3::timestamptz[], $4::jsonb[]) AS x(d, t, p)`,
    [
      f.teamA.id,
      EVENTS.map((e) => e.did),
      EVENTS.map((e) => new Date(e.at)),
      EVENTS.map((e) =>
        JSON.stringify({ $session_id: e.session, ...(e.browser ? { $browser: e.browser } : {}) }),
      ),
    ],
  );
});

afterAll(() => h.stop());

const DAYS = Array.from({ length: 40 }, (_, i) => addDays('2026-10-15', i));
const range = { date_from: DAYS[0], date_to: DAYS.at(-1) };

async function trend(series: object, extra: object = {}) {
  const res = await call(h, 'POST', `/api/projects/${f.teamA.id}/query/`, key, {
    query: { kind: 'TrendsQuery', interval: 'day', series: [series], dateRange: range, ...extra },
  });
  expect(res.status).toBe(200);
  return res.body.results as Array<{ days: string[]; data: number[]; breakdown_value?: string }>;
}

it.each([
  ['weekly_active', 7],
  ['monthly_active', 28],
] as const)('%s by day equals the reference', async (math, window) => {
  const [result] = await trend({ kind: 'EventsNode', event: 'pageview', math });
  expect(result!.days).toEqual(DAYS);
  expect(result!.data).toEqual(
    reference(
      DAYS,
      window,
      () => true,
      (e) => personOf(e.did),
    ),
  );
});

it('weekly_active by day with a breakdown equals the reference for each value', async () => {
  const results = await trend(
    { kind: 'EventsNode', event: 'pageview', math: 'weekly_active' },
    { breakdownFilter: { breakdown: '$browser', breakdown_type: 'event' } },
  );
  expect(results.map((r) => r.breakdown_value).sort()).toEqual(
    ['$$_posthog_breakdown_null_$$', 'Chrome', 'Firefox', 'Safari'].sort(),
  );
  for (const r of results) {
    const value = r.breakdown_value === '$$_posthog_breakdown_null_$$' ? null : r.breakdown_value;
    expect(r.data).toEqual(
      reference(
        DAYS,
        7,
        (e) => e.browser === value,
        (e) => personOf(e.did),
      ),
    );
  }
});

it('dau and unique sessions per day equal the reference', async () => {
  const [dau] = await trend({ kind: 'EventsNode', event: 'pageview', math: 'dau' });
  expect(dau!.data).toEqual(
    reference(
      DAYS,
      1,
      () => true,
      (e) => personOf(e.did),
    ),
  );
  const [sessions] = await trend({ kind: 'EventsNode', event: 'pageview', math: 'unique_session' });
  expect(sessions!.data).toEqual(
    reference(
      DAYS,
      1,
      () => true,
      (e) => e.session,
    ),
  );
});
