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
import { parsePropertyFilters, propertyFilterSql, type PropertyGroup } from '../filters/property-filter-sql';

export const TRENDS_INTERVALS = ['hour', 'day', 'week', 'month'] as const;
export type TrendsInterval = (typeof TRENDS_INTERVALS)[number];
export const TRENDS_MATH = ['total', 'dau'] as const;

/** A list of property filters or an AND/OR group: its content is checked by the filter parser
 * (filters/property-filter-sql.ts), which names the offending part. */
const PROPERTIES_SCHEMA = { type: ['array', 'object'] } as const;

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
          properties: PROPERTIES_SCHEMA,
        },
      },
    },
    properties: PROPERTIES_SCHEMA,
    breakdownFilter: {
      type: 'object',
      additionalProperties: false,
      required: ['breakdown'],
      properties: {
        breakdown: { type: 'string', minLength: 1, maxLength: 400 },
        breakdown_type: { enum: ['event', 'person'] },
        breakdown_limit: { type: 'integer', minimum: 1, maximum: 1000 },
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
    compareFilter: {
      type: 'object',
      additionalProperties: false,
      properties: { compare: { type: ['boolean', 'null'] } },
    },
  },
} as const;

export interface EventsNode {
  kind: 'EventsNode';
  event?: string | null;
  name?: string | null;
  custom_name?: string | null;
  math?: (typeof TRENDS_MATH)[number];
  properties?: unknown;
}

export interface BreakdownFilter {
  breakdown: string;
  breakdown_type?: 'event' | 'person';
  breakdown_limit?: number;
}

/** PostHog's breakdown values for "every other value" and for events without the property. */
export const BREAKDOWN_OTHER = '$$_posthog_breakdown_other_$$';
export const BREAKDOWN_NULL = '$$_posthog_breakdown_null_$$';
const DEFAULT_BREAKDOWN_LIMIT = 25;

export interface TrendsQuery {
  kind: 'TrendsQuery';
  series: EventsNode[];
  interval?: TrendsInterval;
  dateRange?: { date_from?: string | null; date_to?: string | null; explicitDate?: boolean | null };
  trendsFilter?: { display?: 'ActionsLineGraph' | 'ActionsTable' | 'BoldNumber' };
  properties?: unknown;
  breakdownFilter?: BreakdownFilter;
  compareFilter?: { compare?: boolean | null };
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

/** The period before `range`, as long in buckets: PostHog's "compare to previous period". */
export function previousRange(range: ResolvedRange, interval: TrendsInterval): ResolvedRange {
  const n = range.buckets.length;
  const back = (l: Local): Local => {
    let b = l;
    for (let i = 0; i < n; i++) {
      const unit = interval === 'hour' ? 'h' : interval === 'day' ? 'd' : interval === 'week' ? 'w' : 'm';
      b = shift(b, unit, -1);
    }
    return b;
  };
  return { from: back(range.from), to: back(range.to), buckets: range.buckets.map(back) };
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
  breakdown_value?: string;
  compare?: boolean;
  compare_label?: 'current' | 'previous';
}

// The person an event counts as (its distinct id's current person, else the id itself) and that
// person's properties now (none without a person), from one join of the person tables, made only
// when the query needs a person.
const PERSON_JOIN = `LEFT JOIN person_distinct_ids pdi ON pdi.team_id = e.team_id AND pdi.distinct_id = e.distinct_id
    LEFT JOIN persons p ON p.id = pdi.person_id`;
const PERSON_PROPERTIES = `COALESCE(p.properties, '{}'::jsonb)`;
const PERSON_OF_EVENT = `coalesce(p.uuid::text, 'd:' || e.distinct_id)`;

function filters(raw: unknown, attr: string): PropertyGroup | undefined {
  if (raw === undefined || raw === null) return undefined;
  return parsePropertyFilters(JSON.stringify(raw), attr, ['event', 'person']);
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
  const queryFilters = filters(query.properties, 'query.properties');
  const breakdown = query.breakdownFilter;
  // Every series of the query over one period (the asked one, or the one before it to compare).
  async function seriesOver(range: ResolvedRange): Promise<TrendsResult[]> {
    const results: TrendsResult[] = [];
    for (const [order, node] of query.series.entries()) {
      const math = node.math ?? 'total';
      const event = node.event ?? null;
      const seriesFilters = filters(node.properties, `query.series.${order}.properties`);
      const counted = math === 'dau' ? `count(DISTINCT ${PERSON_OF_EVENT})` : 'count(*)';
      const params: unknown[] = [teamId, timeZone, localText(range.from), localText(range.to)];
      const bind = (value: unknown) => `$${params.push(value)}`;
      const conditions = [
        'e.team_id = $1',
        'e.timestamp >= ($3::timestamp AT TIME ZONE $2)',
        "e.timestamp < (($4::timestamp + interval '1 second') AT TIME ZONE $2)",
      ];
      if (event !== null) conditions.push(`e.event = ${bind(event)}`);
      const sources = { event: 'e.properties', person: PERSON_PROPERTIES };
      for (const group of [queryFilters, seriesFilters])
        if (group) conditions.push(propertyFilterSql(group, sources, bind, now));
      const where = conditions.join(' AND ');
      const needsPerson =
        math === 'dau' ||
        breakdown?.breakdown_type === 'person' ||
        [queryFilters, seriesFilters].some(
          (g) => g !== undefined && JSON.stringify(g).includes('"type":"person"'),
        );
      const from = `events e ${needsPerson ? PERSON_JOIN : ''}`;
      // Grouped by the bucket's timestamp, formatted once per group (formatting in the GROUP BY
      // formats every row).
      const bucket = bucketSql(interval);
      const breakdownExpr = breakdown
        ? `(${breakdown.breakdown_type === 'person' ? PERSON_PROPERTIES : 'e.properties'} ->> ${bind(breakdown.breakdown)})`
        : 'NULL::text';
      // Per bucket and breakdown value. Distinct persons over the whole range are not the sum of
      // the days': for dau, a second pass over the range counts them per value (it ranks the values
      // and gives BoldNumber); event counts over the range are the buckets' sum.
      let sql = `SELECT to_char(${bucket}, 'YYYY-MM-DD HH24:MI:SS') AS bucket, ${breakdownExpr} AS bv, ${counted} AS n
        FROM ${from} WHERE ${where} GROUP BY ${bucket}, 2`;
      if (math === 'dau' && (bold || breakdown))
        sql += ` UNION ALL SELECT NULL, ${breakdownExpr}, ${counted} FROM ${from} WHERE ${where} GROUP BY 2`;
      const fetched = await pool.query<{ bucket: string | null; bv: string | null; n: string }>(sql, params);
      const rows = fetched.rows;
      if (math !== 'dau') {
        const totals = new Map<string | null, number>();
        for (const r of rows) totals.set(r.bv, (totals.get(r.bv) ?? 0) + Number(r.n));
        for (const [bv, n] of totals) rows.push({ bucket: null, bv, n: String(n) });
      }

      const name = event ?? 'All events';
      const base = {
        labels: range.buckets.map((b) => label(b, interval)),
        days: range.buckets.map((b) => dayText(b, interval)),
        action: {
          id: event,
          type: 'events' as const,
          order,
          name,
          custom_name: node.custom_name ?? null,
          math,
        },
      };
      const seriesOf = (
        values: ReadonlySet<string | null> | null,
        whole: number,
        breakdownValue?: string,
      ) => {
        const byBucket = new Map<string, number>();
        for (const r of rows)
          if (r.bucket !== null && (values === null || values.has(r.bv)))
            byBucket.set(r.bucket, (byBucket.get(r.bucket) ?? 0) + Number(r.n));
        const data = range.buckets.map((b) => byBucket.get(localText(b)) ?? 0);
        const count = data.reduce((a, b) => a + b, 0);
        const result: TrendsResult = {
          data,
          ...base,
          count,
          label: breakdownValue === undefined ? (node.custom_name ?? name) : breakdownValue,
        };
        if (breakdownValue !== undefined) result.breakdown_value = breakdownValue;
        if (bold) result.aggregated_value = math === 'dau' ? whole : count;
        return result;
      };
      const wholeRange = rows.filter((r) => r.bucket === null);
      if (!breakdown) {
        results.push(seriesOf(null, Number(wholeRange[0]?.n ?? 0)));
        continue;
      }
      // The values with the most events (or persons) over the range, then "other" for the rest.
      const ranked = wholeRange
        .map((r) => ({ bv: r.bv, n: Number(r.n) }))
        .sort((a, b) => b.n - a.n || String(a.bv).localeCompare(String(b.bv)));
      const limit = breakdown.breakdown_limit ?? DEFAULT_BREAKDOWN_LIMIT;
      for (const { bv, n } of ranked.slice(0, limit))
        results.push(seriesOf(new Set([bv]), n, bv === null ? BREAKDOWN_NULL : bv));
      const rest = ranked.slice(limit);
      if (rest.length === 0) continue;
      if (math !== 'dau') {
        results.push(
          seriesOf(
            new Set(rest.map((r) => r.bv)),
            rest.reduce((a, r) => a + r.n, 0),
            BREAKDOWN_OTHER,
          ),
        );
        continue;
      }
      // Distinct persons of the other values together are not the sum of theirs: counted again,
      // per bucket and over the range, over the events of none of the top values.
      const top = ranked.slice(0, limit).map((r) => r.bv);
      const topValues = bind(top.filter((v): v is string => v !== null));
      const notTop = top.includes(null)
        ? `(${breakdownExpr} IS NOT NULL AND NOT (${breakdownExpr} = ANY(${topValues}::text[])))`
        : `(${breakdownExpr} IS NULL OR NOT (${breakdownExpr} = ANY(${topValues}::text[])))`;
      const other = await pool.query<{ bucket: string | null; n: string }>(
        `SELECT to_char(${bucket}, 'YYYY-MM-DD HH24:MI:SS') AS bucket, ${counted} AS n
         FROM ${from} WHERE ${where} AND ${notTop} GROUP BY ${bucket}
       UNION ALL SELECT NULL, ${counted} FROM ${from} WHERE ${where} AND ${notTop}`,
        params,
      );
      const byBucket = new Map(
        other.rows.filter((r) => r.bucket !== null).map((r) => [r.bucket!, Number(r.n)]),
      );
      const data = range.buckets.map((b) => byBucket.get(localText(b)) ?? 0);
      const result: TrendsResult = {
        data,
        ...base,
        count: data.reduce((a, b) => a + b, 0),
        label: BREAKDOWN_OTHER,
        breakdown_value: BREAKDOWN_OTHER,
      };
      if (bold) result.aggregated_value = Number(other.rows.find((r) => r.bucket === null)?.n ?? 0);
      results.push(result);
    }
    return results;
  }

  const compare = query.compareFilter?.compare === true;
  const current = await seriesOver(range);
  if (!compare)
    return {
      results: current,
      resolved_date_range: { date_from: isoIn(range.from, timeZone), date_to: isoIn(range.to, timeZone) },
    };
  const previous = await seriesOver(previousRange(range, interval));
  return {
    results: [
      ...current.map((r) => ({ ...r, compare: true, compare_label: 'current' as const })),
      ...previous.map((r) => ({ ...r, compare: true, compare_label: 'previous' as const })),
    ],
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
