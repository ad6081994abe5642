// Date parsing for the is_date_before / is_date_after / is_date_exact operators, following
// PostHog's flag service (rust/feature-flags properties/relative_date.rs and property_matching.rs)
// with the team timezone fixed to UTC: naive date-times are read as UTC.

const RELATIVE_DATE = /^-?(\d+)([hdwmy])$/;
const RFC3339 = /^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/;
const BARE_DATE = /^(\d{4})-(\d{2})-(\d{2})$/;
const NAIVE_DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2})(?::(\d{2})(\.\d+)?)?$/;
// Rust's str::parse::<f64> grammar, which decides whether a string property is an epoch timestamp.
const FLOAT = /^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/;
const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;

/**
 * `-7d`, `-1h`, `-2w`, `-1m`, `-1y` relative to `now`. PostHog ignores the sign: `7d` also means
 * seven days ago. Counts of 10000 or more are rejected, as PostHog does, to avoid overflow.
 */
export function parseRelativeDate(value: string, now: Date): Date | undefined {
  const match = RELATIVE_DATE.exec(value);
  if (!match) return undefined;
  const count = Number(match[1]);
  if (count >= 10_000) return undefined;
  const t = now.getTime();
  switch (match[2]) {
    case 'h':
      return new Date(t - count * HOUR_MS);
    case 'd':
      return new Date(t - count * DAY_MS);
    case 'w':
      return new Date(t - count * 7 * DAY_MS);
    case 'm':
      return stepBack(now, count, 'month');
    default:
      return stepBack(now, count, 'year');
  }
}

// Calendar months and years are stepped back one at a time, clamping the day to the target
// month's length at each step, exactly like PostHog's Rust service (Mar 31 - 2m = Jan 29,
// because the first step lands on Feb 29). Time of day is kept.
function stepBack(now: Date, count: number, unit: 'month' | 'year'): Date {
  let year = now.getUTCFullYear();
  let month = now.getUTCMonth();
  let day = now.getUTCDate();
  for (let i = 0; i < count; i++) {
    if (unit === 'year') {
      year -= 1;
    } else if (month === 0) {
      year -= 1;
      month = 11;
    } else {
      month -= 1;
    }
    day = Math.min(day, daysInMonth(year, month));
  }
  const result = new Date(now.getTime());
  result.setUTCFullYear(year, month, day);
  return result;
}

function daysInMonth(year: number, month: number): number {
  return new Date(Date.UTC(year, month + 1, 0)).getUTCDate();
}

/** A filter-side date: relative, ISO 8601 with offset, bare date or naive date-time (UTC). */
export function parseDateString(value: string, now: Date): Date | undefined {
  const relative = parseRelativeDate(value, now);
  if (relative) return relative;
  if (RFC3339.test(value)) return valid(new Date(value.replace(' ', 'T')));
  const bare = BARE_DATE.exec(value);
  if (bare) return utc(bare[1], bare[2], bare[3]);
  const naive = NAIVE_DATE_TIME.exec(value);
  if (naive) return utc(naive[1], naive[2], naive[3], naive[4], naive[5], naive[6], naive[7]);
  // Last resort for other spellings PostHog's date parser accepts (RFC 2822 and the like).
  return valid(new Date(value));
}

/** A person/group property used as a date: epoch seconds (number or numeric string) or a date string. */
export function parsePropertyDate(value: unknown, now: Date): Date | undefined {
  if (typeof value === 'number') return Number.isFinite(value) ? valid(new Date(value * 1000)) : undefined;
  if (typeof value !== 'string') return undefined;
  if (FLOAT.test(value)) return valid(new Date(Number(value) * 1000));
  return parseDateString(value, now);
}

function utc(
  year: string | undefined,
  month: string | undefined,
  day: string | undefined,
  hour = '0',
  minute = '0',
  second = '0',
  fraction = '',
): Date | undefined {
  const [y, mo, d, h, mi, s] = [year, month, day, hour, minute, second].map(Number) as number[];
  const ms = fraction ? Math.floor(Number(`0${fraction}`) * 1000) : 0;
  const date = new Date(Date.UTC(y!, mo! - 1, d!, h!, mi!, s!, ms));
  // Date.UTC rolls 2024-02-30 over into March; PostHog rejects such a date, so do we.
  const roundTrips =
    date.getUTCFullYear() === y &&
    date.getUTCMonth() === mo! - 1 &&
    date.getUTCDate() === d &&
    date.getUTCHours() === h &&
    date.getUTCMinutes() === mi &&
    date.getUTCSeconds() === s;
  return roundTrips ? date : undefined;
}

function valid(date: Date): Date | undefined {
  return Number.isNaN(date.getTime()) ? undefined : date;
}
