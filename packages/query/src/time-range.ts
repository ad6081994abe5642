// Date ranges of the query kinds, in the project's time zone: PostHog's relative and absolute
// `date_from` / `date_to`, the buckets of an interval between them, and the period before a range
// (compare). Pure, and closed-form: every step is a fixed number of calendar operations whatever
// the range, so a request cannot buy event-loop time with a long range (a range is also bounded
// in buckets, MAX_BUCKETS). Years are those Postgres and the answers both hold, 0001 to 9999;
// anything outside is a 400 naming the field, never text compared or shifted by a century.
import { ValidationError } from '@sett/http';

export const TRENDS_INTERVALS = ['hour', 'day', 'week', 'month'] as const;
export type Interval = (typeof TRENDS_INTERVALS)[number];

/** Wall-clock time in a zone, to the second. */
export interface Local {
  y: number;
  mo: number; // 1-12
  d: number;
  h: number;
  mi: number;
  s: number;
}

const MIN_YEAR = 1;
const MAX_YEAR = 9999;

/** At most this many buckets per series (a year of hours, ten years of days). */
export const MAX_BUCKETS = 3_700;

const formatters = new Map<string, Intl.DateTimeFormat>();

/** The wall-clock time of an instant in a zone. */
export function localOf(date: Date, timeZone: string): Local {
  let format = formatters.get(timeZone);
  if (!format) {
    format = new Intl.DateTimeFormat('en-US', {
      timeZone,
      hourCycle: 'h23',
      era: 'short',
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      second: '2-digit',
    });
    formatters.set(timeZone, format);
  }
  const parts = format.formatToParts(date);
  const get = (type: string) => Number(parts.find((p) => p.type === type)!.value);
  const bc = parts.find((p) => p.type === 'era')?.value === 'BC';
  return {
    y: bc ? 1 - get('year') : get('year'),
    mo: get('month'),
    d: get('day'),
    h: get('hour'),
    mi: get('minute'),
    s: get('second'),
  };
}

/** A wall-clock time as milliseconds of a calendar without zones: totally ordered, any year. */
export function wallMs(l: Local): number {
  const t = new Date(0);
  t.setUTCFullYear(l.y, l.mo - 1, l.d);
  t.setUTCHours(l.h, l.mi, l.s, 0);
  return t.getTime();
}

function fromWallMs(ms: number): Local {
  const t = new Date(ms);
  return {
    y: t.getUTCFullYear(),
    mo: t.getUTCMonth() + 1,
    d: t.getUTCDate(),
    h: t.getUTCHours(),
    mi: t.getUTCMinutes(),
    s: t.getUTCSeconds(),
  };
}

export type Unit = 'h' | 'd' | 'w' | 'm' | 'y';

/** Calendar arithmetic on wall-clock times, n units at once (months clamp to the month's end). */
export function shift(l: Local, unit: Unit, n: number): Local {
  if (unit === 'h') return fromWallMs(wallMs(l) + n * 3_600_000);
  if (unit === 'd' || unit === 'w') return fromWallMs(wallMs(l) + n * (unit === 'w' ? 7 : 1) * 86_400_000);
  const months = unit === 'm' ? n : 12 * n;
  const index = l.y * 12 + (l.mo - 1) + months;
  const y = Math.floor(index / 12);
  const mo = index - y * 12 + 1;
  return { ...l, y, mo, d: Math.min(l.d, daysInMonth(y, mo)) };
}

export function daysInMonth(y: number, mo: number): number {
  if (mo === 2) return (y % 4 === 0 && y % 100 !== 0) || y % 400 === 0 ? 29 : 28;
  return [4, 6, 9, 11].includes(mo) ? 30 : 31;
}

const startOfDay = (l: Local): Local => ({ ...l, h: 0, mi: 0, s: 0 });

/** The bucket a wall-clock time falls in; weeks start on Sunday, as PostHog's default. */
export function bucketStart(l: Local, interval: Interval): Local {
  if (interval === 'hour') return { ...l, mi: 0, s: 0 };
  if (interval === 'day') return startOfDay(l);
  if (interval === 'month') return { ...startOfDay(l), d: 1 };
  const weekday = new Date(wallMs(startOfDay(l))).getUTCDay(); // 0 = Sunday
  return shift(startOfDay(l), 'd', -weekday);
}

const UNIT_OF: Record<Interval, Unit> = { hour: 'h', day: 'd', week: 'w', month: 'm' };

const pad = (n: number, w = 2) => String(n).padStart(w, '0');
/** `YYYY-MM-DD HH:MM:SS`, what Postgres reads as a timestamp (years 0001-9999). */
export const localText = (l: Local) =>
  `${pad(l.y, 4)}-${pad(l.mo)}-${pad(l.d)} ${pad(l.h)}:${pad(l.mi)}:${pad(l.s)}`;

const RELATIVE = /^-(\d{1,5})([hdwmy])$/;
const ABSOLUTE = /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2}))?)?$/;

function inYears(l: Local, attr: string, value: string): Local {
  if (l.y < MIN_YEAR || l.y > MAX_YEAR)
    throw new ValidationError(`${attr} must fall in the years 0001 to 9999: ${value} is year ${l.y}.`, attr);
  return l;
}

/**
 * A date with its own offset (2026-11-01T12:00:00Z) as the instant it names, in ISO; undefined
 * for any other text (a wall-clock time or a relative date, read in the project's zone). A 400
 * naming `attr` when it falls outside the years 0001 to 9999.
 */
export function instantOf(value: string, attr: string): string | undefined {
  if (!/^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d{1,6})?)?(Z|[+-]\d{2}:?\d{2})$/.test(value))
    return undefined;
  const ms = Date.parse(value);
  if (Number.isNaN(ms) || ms < Date.parse('0001-01-01T00:00:00Z') || ms > Date.parse('9999-12-31T23:59:59Z'))
    throw new ValidationError(`${attr} is not a date in the years 0001 to 9999: ${value}`, attr);
  return new Date(ms).toISOString();
}

/** A date_from/date_to value as a wall-clock time in the project's zone; `end` picks the end of
 * a whole day given as a date. */
export function parseDate(value: string, now: Local, attr: string, end: boolean): Local {
  const rel = RELATIVE.exec(value);
  if (rel) {
    const unit = rel[2] as Unit;
    // PostHog: -7d starts at midnight 7 days ago; -24h is exactly 24 hours ago.
    const shifted = shift(now, unit, -Number(rel[1]));
    return inYears(unit === 'h' ? { ...shifted, mi: 0, s: 0 } : startOfDay(shifted), attr, value);
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
    if (l.mo < 1 || l.mo > 12 || l.d < 1 || l.d > daysInMonth(l.y, l.mo) || l.h > 23 || l.mi > 59 || l.s > 59)
      throw new ValidationError(`${attr} is not a valid date: ${value}`, attr);
    inYears(l, attr, value);
    return end && abs[4] === undefined ? { ...l, h: 23, mi: 59, s: 59 } : l;
  }
  throw new ValidationError(
    `${attr} must be a relative date (-7d, -24h, -4w, -3m, -1y, dStart, mStart, yStart) or YYYY-MM-DD[ HH:MM[:SS]]: ${value}`,
    attr,
  );
}

export interface ResolvedRange {
  from: Local;
  to: Local;
  buckets: Local[];
}

export interface DateRange {
  date_from?: string | null;
  date_to?: string | null;
  explicitDate?: boolean | null;
}

/** How many buckets of `interval` lie from the bucket of `from` to the one of `to`, computed
 * without walking them. */
export function bucketCount(from: Local, to: Local, interval: Interval): number {
  const a = bucketStart(from, interval);
  const b = bucketStart(to, interval);
  if (interval === 'month') return (b.y - a.y) * 12 + (b.mo - a.mo) + 1;
  const unitMs = interval === 'hour' ? 3_600_000 : interval === 'day' ? 86_400_000 : 7 * 86_400_000;
  return Math.round((wallMs(b) - wallMs(a)) / unitMs) + 1;
}

export function resolveRange(
  dateRange: DateRange | undefined,
  interval: Interval,
  timeZone: string,
  nowDate: Date,
  defaultFrom = '-7d',
): ResolvedRange {
  const now = localOf(nowDate, timeZone);
  const from = parseDate(dateRange?.date_from ?? defaultFrom, now, 'dateRange.date_from', false);
  const toValue = dateRange?.date_to;
  const to = toValue ? parseDate(toValue, now, 'dateRange.date_to', true) : now;
  if (wallMs(from) > wallMs(to))
    throw new ValidationError('dateRange.date_from is after dateRange.date_to.', 'dateRange.date_from');
  const count = bucketCount(from, to, interval);
  if (count > MAX_BUCKETS)
    throw new ValidationError(
      `The date range holds ${count} ${interval} intervals, more than ${MAX_BUCKETS}: use a longer interval or a shorter range.`,
      'interval',
    );
  const first = bucketStart(from, interval);
  const buckets = Array.from({ length: count }, (_, i) => shift(first, UNIT_OF[interval], i));
  // The last bucket may lie past year 9999 only if `to` does, which parseDate refused.
  return { from, to, buckets };
}

/** The period before `range`, as long in buckets: PostHog's "compare to previous period". One
 * shift per point, by the whole length at once. */
export function previousRange(range: ResolvedRange, interval: Interval): ResolvedRange {
  const n = range.buckets.length;
  const back = (l: Local): Local => shift(l, UNIT_OF[interval], -n);
  const previous = { from: back(range.from), to: back(range.to), buckets: range.buckets.map(back) };
  inYears(previous.from, 'compareFilter.compare', `the period before ${localText(range.from)}`);
  return previous;
}

const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];

/** PostHog's labels: `1-Nov-2026`, hourly `1-Nov-2026 13:00`. */
export function label(l: Local, interval: Interval): string {
  const day = `${l.d}-${MONTHS[l.mo - 1]}-${l.y}`;
  return interval === 'hour' ? `${day} ${pad(l.h)}:00` : day;
}

/** PostHog's `days`: `2026-11-01`, hourly `2026-11-01 13:00:00`. */
export function dayText(l: Local, interval: Interval): string {
  const date = `${pad(l.y, 4)}-${pad(l.mo)}-${pad(l.d)}`;
  return interval === 'hour' ? `${date} ${pad(l.h)}:00:00` : date;
}

/** A wall-clock time in a zone as an ISO timestamp with that zone's offset at that time. */
export function isoIn(l: Local, timeZone: string): string {
  const asUtc = wallMs(l);
  // The zone's offset at (about) that instant; corrected once for a DST change in between.
  let offset = offsetMinutes(new Date(asUtc), timeZone);
  offset = offsetMinutes(new Date(asUtc - offset * 60_000), timeZone);
  const sign = offset >= 0 ? '+' : '-';
  const abs = Math.abs(offset);
  return `${pad(l.y, 4)}-${pad(l.mo)}-${pad(l.d)}T${pad(l.h)}:${pad(l.mi)}:${pad(l.s)}${sign}${pad(Math.floor(abs / 60))}:${pad(abs % 60)}`;
}

function offsetMinutes(date: Date, timeZone: string): number {
  const l = localOf(date, timeZone);
  return Math.round((wallMs(l) - Math.floor(date.getTime() / 1000) * 1000) / 60_000);
}

/**
 * Whether the zone's offset from UTC is a whole number of hours all through the range, so that
 * each UTC hour lies in exactly one of its hour, day, week or month buckets (what lets the hourly
 * counts serve a trend). Sampled at both ends and every 6 hours between: offsets that are not whole
 * hours (India, Nepal, Lord Howe's half-hour summer time) last far longer than that.
 */
export function wholeHourOffsets(from: Local, to: Local, timeZone: string): boolean {
  const start = Date.parse(isoIn(from, timeZone));
  const end = Date.parse(isoIn(to, timeZone));
  for (let t = start; ; t += 6 * 3_600_000) {
    const at = Math.min(t, end);
    if (offsetMinutes(new Date(at), timeZone) % 60 !== 0) return false;
    if (at === end) return true;
  }
}
