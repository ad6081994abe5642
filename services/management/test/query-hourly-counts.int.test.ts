// Trends that count events with no filter or breakdown read whole hours from event_counts_hourly
// and the partial hours at the range's ends from the raw rows. Against a reference computed here
// over the same events: zones with whole-hour offsets (UTC, New York across the end of daylight
// saving time) and one without (Kolkata, +05:30, which must read raw rows), hour, day and week
// buckets, ranges that start and end inside an hour, every event and one event, after deletes,
// concurrent batches writing the same hours in opposite orders (no deadlock, exact counts), and
// truncation.
import { randomUUID } from 'node:crypto';
import { BREAKDOWN_COUNTED_PROPERTIES } from '@sett/query';
import { hourlyCountsDrift, propertyCountsDrift, prng } from '@sett/testing';
import { call, createKey, seed, startHarness, type Fixture, type Harness } from './helpers';

let h: Harness;
let f: Fixture;
let key: string;

interface Ev {
  uuid: string;
  event: string;
  at: number; // epoch ms
  /** $browser: a name, a number (its text is the value), absent, or overlong. */
  browser?: string | number;
}

const NULL_VALUE = '$$_posthog_breakdown_null_$$';
const OVERLONG = 'x'.repeat(300);
/** The day overlong values were sent on: ranges over it read the raw rows. */
const OVERLONG_DAY = Date.parse('2026-11-05T00:00:00Z');

const START = Date.parse('2026-10-29T00:00:00Z');
const SPAN = 8 * 86_400_000;
const NAMES = ['pageview', 'signup', 'purchase'];
let events: Ev[] = [];

async function insert(batch: Ev[]): Promise<void> {
  await h.pool.query(
    `INSERT INTO events (uuid, team_id, event, distinct_id, timestamp, properties)
     SELECT u, $1, e, 'd', t, p FROM unnest($2::uuid[], $3::text[], $4::timestamptz[], $5::jsonb[]) AS x(u, e, t, p)
     ON CONFLICT (team_id, uuid) DO NOTHING`,
    [
      f.teamA.id,
      batch.map((e) => e.uuid),
      batch.map((e) => e.event),
      batch.map((e) => new Date(e.at)),
      batch.map((e) => JSON.stringify(e.browser === undefined ? {} : { $browser: e.browser, $os: 'Linux' })),
    ],
  );
}

/** The local wall-clock parts of an instant in a zone. */
function local(ms: number, timeZone: string) {
  const parts = Object.fromEntries(
    new Intl.DateTimeFormat('en-CA', {
      timeZone,
      hourCycle: 'h23',
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      second: '2-digit',
    })
      .formatToParts(new Date(ms))
      .map((p) => [p.type, p.value]),
  );
  return parts as Record<'year' | 'month' | 'day' | 'hour' | 'minute' | 'second', string>;
}

/** The bucket label PostHog's `days` would hold for an instant: local hour or local day, or the
 * Sunday starting its week. */
function bucketOf(ms: number, timeZone: string, interval: 'hour' | 'day' | 'week'): string {
  const l = local(ms, timeZone);
  const day = `${l.year}-${l.month}-${l.day}`;
  if (interval === 'hour') return `${day} ${l.hour}:00:00`;
  if (interval === 'day') return day;
  const d = new Date(`${day}T00:00:00Z`);
  d.setUTCDate(d.getUTCDate() - d.getUTCDay());
  return d.toISOString().slice(0, 10);
}

/** Local wall-clock text of an instant, as date_from / date_to take it. */
function wall(ms: number, timeZone: string): string {
  const l = local(ms, timeZone);
  return `${l.year}-${l.month}-${l.day} ${l.hour}:${l.minute}:${l.second}`;
}

async function trend(opts: {
  timeZone: string;
  interval: 'hour' | 'day' | 'week';
  event: string | null;
  from: string;
  to: string;
  breakdown?: boolean;
}): Promise<Map<string, number>> {
  await h.prisma.team.update({ where: { id: f.teamA.id }, data: { timezone: opts.timeZone } });
  const res = await call(h, 'POST', `/api/projects/${f.teamA.id}/query/`, key, {
    query: {
      kind: 'TrendsQuery',
      interval: opts.interval,
      series: [{ kind: 'EventsNode', event: opts.event }],
      dateRange: { date_from: opts.from, date_to: opts.to, explicitDate: true },
      ...(opts.breakdown ? { breakdownFilter: { breakdown: '$browser', breakdown_type: 'event' } } : {}),
    },
    refresh: 'force_blocking',
  });
  expect(res.status).toBe(200);
  // Keyed by bucket, and by breakdown value after a '|' with a breakdown.
  const out = new Map<string, number>();
  for (const r of res.body.results as Array<{ days: string[]; data: number[]; breakdown_value?: string }>)
    r.days.forEach((d, i) => out.set(opts.breakdown ? `${d}|${r.breakdown_value}` : d, r.data[i]!));
  return out;
}

function reference(opts: {
  timeZone: string;
  interval: 'hour' | 'day' | 'week';
  event: string | null;
  fromMs: number;
  toMs: number;
  breakdown?: boolean;
}): Map<string, number> {
  const out = new Map<string, number>();
  for (const e of events) {
    if (opts.event !== null && e.event !== opts.event) continue;
    // date_to is inclusive to the second.
    if (e.at < opts.fromMs || e.at >= opts.toMs + 1000) continue;
    const day = bucketOf(e.at, opts.timeZone, opts.interval);
    const b = opts.breakdown ? `${day}|${e.browser === undefined ? NULL_VALUE : String(e.browser)}` : day;
    out.set(b, (out.get(b) ?? 0) + 1);
  }
  return out;
}

function expectSame(answer: Map<string, number>, expected: Map<string, number>): void {
  const nonZero = new Map([...answer].filter(([, n]) => n !== 0));
  expect(Object.fromEntries(nonZero)).toEqual(Object.fromEntries(expected));
}

beforeAll(async () => {
  h = await startHarness();
  f = await seed(h.prisma);
  key = await createKey(h.prisma, f.alice.id, ['query:read']);
  const next = prng(7);
  const BROWSERS = ['Chrome', 'Safari', 'Firefox', 42, undefined];
  events = Array.from({ length: 3000 }, () => ({
    uuid: randomUUID(),
    event: NAMES[Math.floor(next() ** 2 * NAMES.length)]!,
    browser: BROWSERS[Math.floor(next() * BROWSERS.length)],
    // Whole seconds, some exactly on the hour.
    at:
      START +
      (next() < 0.05 ? Math.floor(next() * 192) * 3_600_000 : Math.floor((next() * SPAN) / 1000) * 1000),
  }));
  // A few overlong values, all on one day.
  for (const e of events)
    if (e.at >= OVERLONG_DAY && e.at < OVERLONG_DAY + 86_400_000 && next() < 0.1) e.browser = OVERLONG;
  for (let i = 0; i < events.length; i += 500) await insert(events.slice(i, i + 500));
  // A redelivered batch stores nothing and counts nothing.
  await insert(events.slice(0, 700));
  expect(await hourlyCountsDrift(h.pool)).toEqual([]);
  expect(await propertyCountsDrift(h.pool)).toEqual([]);
});

afterAll(async () => {
  await h?.stop();
});

const CASES = [
  { timeZone: 'UTC', interval: 'hour' as const },
  { timeZone: 'UTC', interval: 'day' as const },
  { timeZone: 'America/New_York', interval: 'day' as const },
  { timeZone: 'America/New_York', interval: 'hour' as const },
  { timeZone: 'America/New_York', interval: 'week' as const },
  { timeZone: 'Asia/Kolkata', interval: 'day' as const },
];

it.each(CASES)('$timeZone by $interval equals the reference, whole and partial hours', async (c) => {
  // From 10:17:23 on the second day to 15:42:05 on the seventh, local time.
  const fromMs = START + 86_400_000 + 10 * 3_600_000 + 17 * 60_000 + 23_000;
  const toMs = START + 6 * 86_400_000 + 15 * 3_600_000 + 42 * 60_000 + 5_000;
  for (const event of [null, 'signup']) {
    // The range's ends as local wall-clock times of those instants.
    const answer = await trend({
      ...c,
      event,
      from: wall(fromMs, c.timeZone),
      to: wall(toMs, c.timeZone),
    });
    expectSame(answer, reference({ ...c, event, fromMs, toMs }));
  }
});

it('reads the hourly counts where offsets are whole hours, and the raw rows where they are not', async () => {
  const range = { interval: 'day' as const, event: 'pageview', from: '2026-10-30', to: '2026-11-04' };
  const utcBefore = await trend({ ...range, timeZone: 'UTC' });
  const kolkataBefore = await trend({ ...range, timeZone: 'Asia/Kolkata' });
  // Planted: one more event in every counted hour of pageview. Only answers from the counts move.
  await h.pool.query(`UPDATE event_counts_hourly SET count = count + 1 WHERE event = 'pageview'`);
  try {
    const utcAfter = await trend({ ...range, timeZone: 'UTC' });
    const kolkataAfter = await trend({ ...range, timeZone: 'Asia/Kolkata' });
    expect([...utcAfter.values()].reduce((a, b) => a + b, 0)).toBeGreaterThan(
      [...utcBefore.values()].reduce((a, b) => a + b, 0),
    );
    expect(kolkataAfter).toEqual(kolkataBefore);
  } finally {
    await h.pool.query(`UPDATE event_counts_hourly SET count = count - 1 WHERE event = 'pageview'`);
  }
});

it.each([
  { timeZone: 'UTC', interval: 'day' as const, event: null },
  { timeZone: 'America/New_York', interval: 'hour' as const, event: 'pageview' },
  { timeZone: 'America/New_York', interval: 'day' as const, event: 'pageview' },
  { timeZone: 'Asia/Kolkata', interval: 'day' as const, event: null },
])(
  'a $browser breakdown ($timeZone by $interval, event $event) equals the reference, with and without overlong values in range',
  async (c) => {
    const ranges = [
      // Before the overlong day: the property counts answer.
      [START + 86_400_000 + 3_600_000 * 5 + 61_000, OVERLONG_DAY - 3_600_000 * 30 - 7_000],
      // Over it: the raw rows answer.
      [START + 86_400_000 + 3_600_000 * 5 + 61_000, OVERLONG_DAY + 86_400_000 + 3_600_000 * 3 + 5_000],
    ];
    for (const [fromMs, toMs] of ranges) {
      const answer = await trend({
        ...c,
        from: wall(fromMs!, c.timeZone),
        to: wall(toMs!, c.timeZone),
        breakdown: true,
      });
      expectSame(answer, reference({ ...c, fromMs: fromMs!, toMs: toMs!, breakdown: true }));
    }
  },
);

it('the trigger counts exactly the properties the engine reads from the counts', async () => {
  const { rows } = await h.pool.query<{ d: string }>(
    `SELECT pg_get_functiondef('event_counted_values'::regproc) AS d`,
  );
  const list = /ARRAY\[([^\]]+)\]/.exec(rows[0]!.d)![1]!;
  expect([...list.matchAll(/'([^']+)'/g)].map((m) => m[1])).toEqual([...BREAKDOWN_COUNTED_PROPERTIES]);
});

it('reads the property counts for a breakdown by a counted property', async () => {
  const range = {
    timeZone: 'UTC',
    interval: 'day' as const,
    event: 'pageview',
    from: '2026-10-30',
    to: '2026-11-03',
  };
  const before = await trend({ ...range, breakdown: true });
  await h.pool.query(
    `UPDATE event_property_counts_hourly SET count = count + 1 WHERE event = 'pageview' AND value = 'Safari'`,
  );
  try {
    const after = await trend({ ...range, breakdown: true });
    const total = (m: Map<string, number>, value: string) =>
      [...m].filter(([k]) => k.endsWith(`|${value}`)).reduce((a, [, n]) => a + n, 0);
    expect(total(after, 'Safari')).toBeGreaterThan(total(before, 'Safari'));
    // The events without the property are the hour's count less its values': one fewer each.
    expect(total(after, NULL_VALUE)).toBeLessThan(total(before, NULL_VALUE));
  } finally {
    await h.pool.query(
      `UPDATE event_property_counts_hourly SET count = count - 1 WHERE event = 'pageview' AND value = 'Safari'`,
    );
  }
});

it('stays exact after deletes, and under concurrent batches that write the same hours in opposite orders', async () => {
  // A deletion job's statement: a person's events, through events.
  const gone = new Set(events.filter((_, i) => i % 7 === 0).map((e) => e.uuid));
  await h.pool.query(`DELETE FROM events WHERE team_id = $1 AND uuid = ANY($2::uuid[])`, [
    f.teamA.id,
    [...gone],
  ]);
  events = events.filter((e) => !gone.has(e.uuid));
  expect(await hourlyCountsDrift(h.pool)).toEqual([]);
  expect(await propertyCountsDrift(h.pool)).toEqual([]);

  // Two writers, each in a transaction, over the same hours: one in time order, one reversed.
  const next = prng(11);
  const fresh = (n: number) =>
    Array.from({ length: n }, () => ({
      uuid: randomUUID(),
      event: NAMES[Math.floor(next() * NAMES.length)]!,
      at: START + Math.floor((next() * SPAN) / 1000) * 1000,
    }));
  const writer = async (batches: Ev[][]) => {
    const client = await h.pool.connect();
    try {
      for (const batch of batches) {
        await client.query('BEGIN');
        await client.query(
          `INSERT INTO events (uuid, team_id, event, distinct_id, timestamp)
           SELECT u, $1, e, 'd', t FROM unnest($2::uuid[], $3::text[], $4::timestamptz[]) AS x(u, e, t)`,
          [f.teamA.id, batch.map((e) => e.uuid), batch.map((e) => e.event), batch.map((e) => new Date(e.at))],
        );
        await client.query('COMMIT');
      }
    } finally {
      client.release();
    }
  };
  const a = Array.from({ length: 10 }, () => fresh(200).sort((x, y) => x.at - y.at));
  const b = Array.from({ length: 10 }, () => fresh(200).sort((x, y) => y.at - x.at));
  await Promise.all([writer(a), writer(b)]);
  events.push(...a.flat(), ...b.flat());
  expect(await hourlyCountsDrift(h.pool)).toEqual([]);
  expect(await propertyCountsDrift(h.pool)).toEqual([]);

  const answer = await trend({
    timeZone: 'America/New_York',
    interval: 'day',
    event: null,
    from: '2026-10-28',
    to: '2026-11-07',
  });
  const fromMs = Date.parse('2026-10-28T04:00:00Z');
  const toMs = Date.parse('2026-11-08T04:59:59Z');
  expectSame(answer, reference({ timeZone: 'America/New_York', interval: 'day', event: null, fromMs, toMs }));

  // A truncate empties them, alone or named with them.
  await h.pool.query('TRUNCATE events');
  expect((await h.pool.query(`SELECT count(*)::int AS n FROM event_counts_hourly`)).rows[0].n).toBe(0);
  await insert(events.slice(0, 10));
  await h.pool.query('TRUNCATE events, event_counts_hourly');
  expect(await hourlyCountsDrift(h.pool)).toEqual([]);
});

it('hostile requests on the counted and one-pass paths answer 400 or a bounded 200, never a 5xx', async () => {
  const base = { kind: 'TrendsQuery', dateRange: { date_from: '2026-10-29', date_to: '2026-11-06' } };
  const cases: Array<[string, object, number]> = [
    ['NUL in the event name', { ...base, series: [{ kind: 'EventsNode', event: 'page\u0000view' }] }, 400],
    [
      'a 10,000-character breakdown key',
      {
        ...base,
        series: [{ kind: 'EventsNode', event: null }],
        breakdownFilter: { breakdown: 'x'.repeat(10_000) },
      },
      400,
    ],
    [
      'hourly buckets over 20 years',
      {
        kind: 'TrendsQuery',
        interval: 'hour',
        series: [{ kind: 'EventsNode' }],
        dateRange: { date_from: '-20y' },
      },
      400,
    ],
    [
      'weekly active by day over 10 years, by $browser, 1,000 values',
      {
        kind: 'TrendsQuery',
        series: [{ kind: 'EventsNode', event: null, math: 'weekly_active' }],
        dateRange: { date_from: '-10y' },
        breakdownFilter: { breakdown: '$browser', breakdown_limit: 1000 },
      },
      400,
    ],
    [
      'weekly active by day over 3 years',
      {
        kind: 'TrendsQuery',
        series: [{ kind: 'EventsNode', event: null, math: 'weekly_active' }],
        dateRange: { date_from: '-3y' },
      },
      200,
    ],
    [
      'a breakdown value filter nested 200 deep',
      {
        ...base,
        series: [{ kind: 'EventsNode', event: null }],
        breakdownFilter: { breakdown: '$browser' },
        properties: JSON.parse('{"type":"AND","values":['.repeat(200) + ']}'.repeat(200)),
      },
      400,
    ],
  ];
  for (const [name, query, status] of cases) {
    const res = await call(h, 'POST', `/api/projects/${f.teamA.id}/query/`, key, { query });
    expect({ name, status: res.status }).toEqual({ name, status });
    if (status === 400) expect(typeof res.body.detail).toBe('string');
  }
});
