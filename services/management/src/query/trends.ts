// TrendsQuery over the raw events table, the first query kind of POST /api/projects/:id/query/
// (PostHog's request and response shapes). What it serves: series of EventsNode (one event, or
// every event with `event: null`) counted as `total` (events) or `dau` (distinct persons: a
// distinct id merged into another person counts as that person, an id with no person counts as
// itself); intervals hour, day, week (weeks start on Sunday, as PostHog's default) and month;
// relative (`-7d`, `-24h`, `-4w`, `-3m`, `-1y`, `dStart`, `mStart`, `yStart`) and absolute
// (`YYYY-MM-DD`, or with a time) date ranges, bucketed in the project's time zone; `BoldNumber`
// display (`aggregated_value`). Anything else a TrendsQuery may hold is refused by the schema
// with a 400 naming it, never ignored.
//
// Cost: one statement per series, an index range scan of (team_id, event, timestamp) (or of
// (team_id, timestamp) for all events) over the range, grouped by bucket; `dau` adds a lookup of
// each distinct id's current person. The statement runs under the management pool's statement
// timeout.
import type { Pool } from 'pg';
import { ValidationError } from '@sett/http';

export const TRENDS_INTERVALS = ['hour', 'day', 'week', 'month'] as const;
export type TrendsInterval = (typeof TRENDS_INTERVALS)[number];
export const TRENDS_MATH = ['total', 'dau'] as const;

export const trendsQuerySchema = {
  type: 'object',
  required: ['kind', 'series'],
  additionalProperties: false,
  properties: {
    kind: { const: 'TrendsQuery' },
    series: {
      type: 'array',
      minItems: 1,
      maxItems: 20,
      items: {
        type: 'object',
        required: ['kind'],
        additionalProperties: false,
        properties: {
          kind: { const: 'EventsNode' },
          event: { type: ['string', 'null'], maxLength: 400 },
          name: { type: ['string', 'null'], maxLength: 400 },
          custom_name: { type: ['string', 'null'], maxLength: 400 },
          math: { enum: [...TRENDS_MATH] },
        },
      },
    },
    interval: { enum: [...TRENDS_INTERVALS] },
    dateRange: {
      type: 'object',
      additionalProperties: false,
      properties: {
        date_from: { type: ['string', 'null'], maxLength: 40 },
        date_to: { type: ['string', 'null'], maxLength: 40 },
        explicitDate: { type: ['boolean', 'null'] },
      },
    },
    trendsFilter: {
      type: 'object',
      additionalProperties: false,
      properties: { display: { enum: ['ActionsLineGraph', 'ActionsTable', 'BoldNumber'] } },
    },
  },
} as const;

export interface EventsNode {
  kind: 'EventsNode';
  event?: string | null;
  name?: string | null;
  custom_name?: string | null;
  math?: (typeof TRENDS_MATH)[number];
}

export interface TrendsQuery {
  kind: 'TrendsQuery';
  series: EventsNode[];
  interval?: TrendsInterval;
  dateRange?: { date_from?: string | null; date_to?: string | null; explicitDate?: boolean | null };
  trendsFilter?: { display?: 'ActionsLineGraph' | 'ActionsTable' | 'BoldNumber' };
}

/** Wall-clock time in a zone, to the second. */
interface Local {
  y: number;
  mo: number; // 1-12
  d: number;
  h: number;
  mi: number;
  s: number;
}

function localOf(date: Date, timeZone: string): Local {
  const parts = new Intl.DateTimeFormat('en-US', {
    timeZone,
    hourCycle: 'h23',
    year: 'numeric',
    month: '2-digit',
    day: '2-digit',
    hour: '2-digit',
    minute: '2-digit',
    second: '2-digit',
  }).formatToParts(date);
  const get = (type: string) => Number(parts.find((p) => p.type === type)!.value);
  return {
    y: get('year'),
    mo: get('month'),
    d: get('day'),
    h: get('hour'),
    mi: get('minute'),
    s: get('second'),
  };
}

const pad = (n: number, w = 2) => String(n).padStart(w, '0');
const localText = (l: Local) =>
  `${pad(l.y, 4)}-${pad(l.mo)}-${pad(l.d)} ${pad(l.h)}:${pad(l.mi)}:${pad(l.s)}`;

/** Calendar arithmetic on wall-clock times (no zone: Date in UTC used as a calendar). */
function shift(l: Local, unit: 'h' | 'd' | 'w' | 'm' | 'y', n: number): Local {
  const t = new Date(Date.UTC(l.y, l.mo - 1, l.d, l.h, l.mi, l.s));
  if (unit === 'h') t.setUTCHours(t.getUTCHours() + n);
  else if (unit === 'd') t.setUTCDate(t.getUTCDate() + n);
  else if (unit === 'w') t.setUTCDate(t.getUTCDate() + 7 * n);
  else if (unit === 'm') t.setUTCMonth(t.getUTCMonth() + n);
  else t.setUTCFullYear(t.getUTCFullYear() + n);
  return {
    y: t.getUTCFullYear(),
    mo: t.getUTCMonth() + 1,
    d: t.getUTCDate(),
    h: t.getUTCHours(),
    mi: t.getUTCMinutes(),
    s: t.getUTCSeconds(),
  };
}

const startOfDay = (l: Local): Local => ({ ...l, h: 0, mi: 0, s: 0 });

/** The bucket a wall-clock time falls in. */
export function bucketStart(l: Local, interval: TrendsInterval): Local {
  if (interval === 'hour') return { ...l, mi: 0, s: 0 };
  if (interval === 'day') return startOfDay(l);
  if (interval === 'month') return { ...startOfDay(l), d: 1 };
  const weekday = new Date(Date.UTC(l.y, l.mo - 1, l.d)).getUTCDay(); // 0 = Sunday
  return shift(startOfDay(l), 'd', -weekday);
}

function nextBucket(l: Local, interval: TrendsInterval): Local {
  if (interval === 'hour') return shift(l, 'h', 1);
  if (interval === 'day') return shift(l, 'd', 1);
  if (interval === 'week') return shift(l, 'w', 1);
  return shift(l, 'm', 1);
}

const RELATIVE = /^-(\d{1,4})([hdwmy])$/;
const ABSOLUTE = /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2}))?)?$/;

/** A date_from/date_to value as a wall-clock time in the project's zone; `end` picks the end of
 * a whole day given as a date. */
function parseDate(value: string, now: Local, attr: string, end: boolean): Local {
  const rel = RELATIVE.exec(value);
  if (rel) {
    const n = Number(rel[1]);
    const unit = rel[2] as 'h' | 'd' | 'w' | 'm' | 'y';
    // PostHog: -7d starts at midnight 7 days ago; -24h is exactly 24 hours ago.
    const shifted = shift(now, unit, -n);
    return unit === 'h' ? { ...shifted, mi: 0, s: 0 } : startOfDay(shifted);
  }
  if (value === 'dStart') return startOfDay(now);
  if (value === 'mStart') return { ...startOfDay(now), d: 1 };
  if (value === 'yStart') return { ...startOfDay(now), mo: 1, d: 1 };
  const abs = ABSOLUTE.exec(value);
  if (abs) {
    const l: Local = {
      y: Number(abs[1]),
      mo: Number(abs[2]),
      d: Number(abs[3]),
      h: Number(abs[4] ?? 0),
      mi: Number(abs[5] ?? 0),
      s: Number(abs[6] ?? 0),
    };
    const check = shift(l, 'd', 0);
    if (check.y !== l.y || check.mo !== l.mo || check.d !== l.d || l.h > 23 || l.mi > 59 || l.s > 59)
      throw new ValidationError(`${attr} is not a valid date: ${value}`, attr);
    return end && abs[4] === undefined ? { ...l, h: 23, mi: 59, s: 59 } : l;
  }
  throw new ValidationError(
    `${attr} must be a relative date (-7d, -24h, -4w, -3m, -1y, dStart, mStart, yStart) or YYYY-MM-DD[ HH:MM[:SS]]: ${value}`,
    attr,
  );
}

/** At most this many buckets per series (a year of hours, ten years of days). */
const MAX_BUCKETS = 3_700;

export interface ResolvedRange {
  from: Local;
  to: Local;
  buckets: Local[];
}

export function resolveRange(query: TrendsQuery, timeZone: string, nowDate: Date): ResolvedRange {
  const interval = query.interval ?? 'day';
  const now = localOf(nowDate, timeZone);
  const from = parseDate(query.dateRange?.date_from ?? '-7d', now, 'dateRange.date_from', false);
  const toValue = query.dateRange?.date_to;
  const to = toValue ? parseDate(toValue, now, 'dateRange.date_to', true) : now;
  if (localText(from) > localText(to))
    throw new ValidationError('dateRange.date_from is after dateRange.date_to.', 'dateRange.date_from');
  const buckets: Local[] = [];
  for (let b = bucketStart(from, interval); localText(b) <= localText(to); b = nextBucket(b, interval)) {
    buckets.push(b);
    if (buckets.length > MAX_BUCKETS)
      throw new ValidationError(
        `The date range holds more than ${MAX_BUCKETS} ${interval} intervals: use a longer interval or a shorter range.`,
        'interval',
      );
  }
  return { from, to, buckets };
}

const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];

/** PostHog's labels: `1-Nov-2026`, hourly `1-Nov-2026 13:00`. */
function label(l: Local, interval: TrendsInterval): string {
  const day = `${l.d}-${MONTHS[l.mo - 1]}-${l.y}`;
  return interval === 'hour' ? `${day} ${pad(l.h)}:00` : day;
}

function dayText(l: Local, interval: TrendsInterval): string {
  const date = `${pad(l.y, 4)}-${pad(l.mo)}-${pad(l.d)}`;
  return interval === 'hour' ? `${date} ${pad(l.h)}:00:00` : date;
}

// The bucket of an event in SQL: its wall-clock time in the zone, truncated; weeks from Sunday.
function bucketSql(interval: TrendsInterval): string {
  const local = `(e.timestamp AT TIME ZONE $2)`;
  if (interval === 'week')
    return `date_trunc('day', ${local}) - make_interval(days => extract(dow from ${local})::int)`;
  return `date_trunc('${interval}', ${local})`;
}

export interface TrendsResult {
  data: number[];
  labels: string[];
  days: string[];
  count: number;
  label: string;
  action: {
    id: string | null;
    type: 'events';
    order: number;
    name: string;
    custom_name: string | null;
    math: string;
  };
  aggregated_value?: number;
}

export async function runTrends(
  pool: Pool,
  teamId: number,
  timeZone: string,
  query: TrendsQuery,
  now: Date,
): Promise<{ results: TrendsResult[]; resolved_date_range: { date_from: string; date_to: string } }> {
  const interval = query.interval ?? 'day';
  const range = resolveRange(query, timeZone, now);
  const bold = query.trendsFilter?.display === 'BoldNumber';
  const results: TrendsResult[] = [];
  for (const [order, node] of query.series.entries()) {
    const math = node.math ?? 'total';
    const event = node.event ?? null;
    const counted =
      math === 'dau'
        ? `count(DISTINCT coalesce((SELECT p.uuid::text FROM person_distinct_ids pdi JOIN persons p ON p.id = pdi.person_id
             WHERE pdi.team_id = e.team_id AND pdi.distinct_id = e.distinct_id), 'd:' || e.distinct_id))`
        : 'count(*)';
    const values: unknown[] = [teamId, timeZone, localText(range.from), localText(range.to)];
    if (event !== null) values.push(event);
    const where = `e.team_id = $1
        AND e.timestamp >= ($3::timestamp AT TIME ZONE $2)
        AND e.timestamp < (($4::timestamp + interval '1 second') AT TIME ZONE $2)
        ${event !== null ? 'AND e.event = $5' : ''}`;
    // The buckets of the range, and for a BoldNumber of distinct persons the whole range's own
    // count (persons over a week are not the sum of the days' persons).
    let sql = `SELECT to_char(${bucketSql(interval)}, 'YYYY-MM-DD HH24:MI:SS') AS bucket, ${counted} AS n
        FROM events e WHERE ${where} GROUP BY 1`;
    if (bold && math === 'dau') sql += ` UNION ALL SELECT NULL, ${counted} FROM events e WHERE ${where}`;
    const { rows } = await pool.query<{ bucket: string | null; n: string }>(sql, values);
    const byBucket = new Map(rows.filter((r) => r.bucket !== null).map((r) => [r.bucket!, Number(r.n)]));
    const total = Number(rows.find((r) => r.bucket === null)?.n ?? 0);
    const data = range.buckets.map((b) => byBucket.get(localText(b)) ?? 0);
    const name = event ?? 'All events';
    const result: TrendsResult = {
      data,
      labels: range.buckets.map((b) => label(b, interval)),
      days: range.buckets.map((b) => dayText(b, interval)),
      count: data.reduce((a, b) => a + b, 0),
      label: node.custom_name ?? name,
      action: { id: event, type: 'events', order, name, custom_name: node.custom_name ?? null, math },
    };
    if (bold) result.aggregated_value = math === 'dau' ? total : result.count;
    results.push(result);
  }
  return {
    results,
    resolved_date_range: { date_from: isoIn(range.from, timeZone), date_to: isoIn(range.to, timeZone) },
  };
}

/** A wall-clock time in a zone as an ISO timestamp with that zone's offset at that time. */
function isoIn(l: Local, timeZone: string): string {
  const asUtc = Date.UTC(l.y, l.mo - 1, l.d, l.h, l.mi, l.s);
  // The zone's offset at (about) that instant; corrected once for a DST change in between.
  let offset = offsetMinutes(new Date(asUtc), timeZone);
  offset = offsetMinutes(new Date(asUtc - offset * 60_000), timeZone);
  const sign = offset >= 0 ? '+' : '-';
  const abs = Math.abs(offset);
  return `${pad(l.y, 4)}-${pad(l.mo)}-${pad(l.d)}T${pad(l.h)}:${pad(l.mi)}:${pad(l.s)}${sign}${pad(Math.floor(abs / 60))}:${pad(abs % 60)}`;
}

function offsetMinutes(date: Date, timeZone: string): number {
  const l = localOf(date, timeZone);
  return Math.round(
    (Date.UTC(l.y, l.mo - 1, l.d, l.h, l.mi, l.s) - Math.floor(date.getTime() / 1000) * 1000) / 60_000,
  );
}
