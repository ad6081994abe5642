// The type of a property, inferred from the first value seen, the way PostHog's ingestion infers
// it: a number is Numeric (DateTime when the key reads as a time and the number as a plausible
// epoch in seconds or milliseconds), a boolean or a string "true"/"false" Boolean, a string that
// reads as a date DateTime, any other string String. Some keys are strings whatever they hold
// (utm_ parameters, flag values, survey answers). Objects, arrays and null give no type.

export type PropertyType = 'Numeric' | 'String' | 'Boolean' | 'DateTime';

const ALWAYS_STRING = /^(?:utm_|\$feature\/|\$survey_response)|^\$feature_flag_response$/i;
const TIME_KEY = /time|timestamp|date|_at$|-at$|createdat|updatedat/i;

// 2000-01-01 to 2100-01-01, in seconds and in milliseconds.
const EPOCH_SECONDS = [946_684_800, 4_102_444_800] as const;
const EPOCH_MILLISECONDS = [EPOCH_SECONDS[0] * 1000, EPOCH_SECONDS[1] * 1000] as const;

// ISO 8601 dates and date-times, the date-time forms JavaScript and databases print, and
// RFC 2822 dates ("Tue, 01 Jan 2030 10:00:00 GMT").
const DATE_PATTERNS = [
  /^\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?(?:Z|[+-]\d{2}(?::?\d{2})?)?)?$/i,
  /^\d{4}\/\d{2}\/\d{2}(?: \d{2}:\d{2}(?::\d{2})?)?$/,
  /^(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun), \d{1,2} (?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) \d{4} \d{2}:\d{2}:\d{2} (?:GMT|UTC|[+-]\d{4})$/,
];

function isDateLike(value: string): boolean {
  if (value.length < 10 || value.length > 40) return false;
  if (!DATE_PATTERNS.some((p) => p.test(value))) return false;
  // The pattern says it looks like a date; the calendar says whether it is one (no 2026-13-45).
  return !Number.isNaN(Date.parse(/^\d{4}-/.test(value) ? value.replace(' ', 'T') : value));
}

function isEpoch(value: number): boolean {
  return (
    (value >= EPOCH_SECONDS[0] && value <= EPOCH_SECONDS[1]) ||
    (value >= EPOCH_MILLISECONDS[0] && value <= EPOCH_MILLISECONDS[1])
  );
}

export function inferPropertyType(key: string, value: unknown): PropertyType | null {
  if (ALWAYS_STRING.test(key)) return 'String';
  if (typeof value === 'number')
    return Number.isFinite(value) && TIME_KEY.test(key) && isEpoch(value) ? 'DateTime' : 'Numeric';
  if (typeof value === 'boolean') return 'Boolean';
  if (typeof value === 'string') {
    const lowered = value.trim().toLowerCase();
    if (lowered === 'true' || lowered === 'false') return 'Boolean';
    return isDateLike(value.trim()) ? 'DateTime' : 'String';
  }
  return null;
}
