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
import { ValidationError } from '@sett/http';
import { parsePropertyFilters, propertyFilterSql, type PropertyGroup } from '../property-filters';
import type { QueryKind } from '../engine';
import type { Statements } from '../statements';
import {
  TRENDS_INTERVALS,
  dayText,
  isoIn,
  label,
  localText,
  previousRange,
  resolveRange,
  type Interval,
  type ResolvedRange,
} from '../time-range';

export { TRENDS_INTERVALS };
export type TrendsInterval = Interval;
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

/**
 * Most numbers one answer may hold: series × breakdown values (with other) × buckets × 2 with
 * compare. Checked before any SQL runs, from the query alone (the bound, not what the data
 * happens to hold). About 2.5 MB of JSON at the worst, labels included.
 */
export const MAX_ANSWER_POINTS = 50_000;

/** A TrendsQuery checked, parsed and costed: what runTrends executes. */
export interface TrendsPlan {
  query: TrendsQuery;
  interval: TrendsInterval;
  range: ResolvedRange;
  queryFilters: PropertyGroup | undefined;
  seriesFilters: Array<PropertyGroup | undefined>;
  /** Every filter group, for the regex checks. */
  groups: Array<PropertyGroup | undefined>;
  points: number;
}

/** Everything that can be refused without the database: dates, filters, and the answer's size. */
export function planTrends(query: TrendsQuery, timeZone: string, now: Date): TrendsPlan {
  const interval = query.interval ?? 'day';
  const range = resolveRange(query.dateRange, interval, timeZone, now);
  const queryFilters = filters(query.properties, 'query.properties');
  const seriesFilters = query.series.map((node, order) =>
    filters(node.properties, `query.series.${order}.properties`),
  );
  const compare = query.compareFilter?.compare === true ? 2 : 1;
  const values = query.breakdownFilter
    ? (query.breakdownFilter.breakdown_limit ?? DEFAULT_BREAKDOWN_LIMIT) + 1
    : 1;
  const points = query.series.length * values * range.buckets.length * compare;
  if (points > MAX_ANSWER_POINTS) {
    const parts = [
      `${query.series.length} series`,
      ...(query.breakdownFilter ? [`${values} breakdown values (breakdown_limit and other)`] : []),
      `${range.buckets.length} ${interval} intervals`,
      ...(compare === 2 ? ['2 periods (compare)'] : []),
    ];
    const attr = query.breakdownFilter
      ? 'query.breakdownFilter.breakdown_limit'
      : query.series.length > 1 && range.buckets.length * compare <= MAX_ANSWER_POINTS
        ? 'query.series'
        : 'query.interval';
    throw new ValidationError(
      `The answer would hold up to ${points.toLocaleString('en-US')} numbers (${parts.join(' × ')}); at most ${MAX_ANSWER_POINTS.toLocaleString('en-US')}. Narrow ${attr.slice(6)}, use a longer interval or a shorter date range.`,
      attr,
    );
  }
  return {
    query,
    interval,
    range,
    queryFilters,
    seriesFilters,
    groups: [queryFilters, ...seriesFilters],
    points,
  };
}

export async function runTrends(
  db: Statements,
  teamId: number,
  timeZone: string,
  plan: TrendsPlan,
  now: Date,
): Promise<{
  results: TrendsResult[];
  hasMore: boolean;
  resolved_date_range: { date_from: string; date_to: string };
}> {
  const { query, interval, range, queryFilters } = plan;
  const bold = query.trendsFilter?.display === 'BoldNumber';
  const breakdown = query.breakdownFilter;
  let hasMore = false;
  // Every series of the query over one period (the asked one, or the one before it to compare).
  async function seriesOver(range: ResolvedRange): Promise<TrendsResult[]> {
    const results: TrendsResult[] = [];
    const bucketIndex = new Map(range.buckets.map((b, i) => [localText(b), i]));
    for (const [order, node] of query.series.entries()) {
      const math = node.math ?? 'total';
      const event = node.event ?? null;
      const seriesFilters = plan.seriesFilters[order];
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
      const { rows } = await db.query<{ bucket: string | null; bv: string | null; n: string }>(sql, params);

      // One pass over the rows: each value's numbers per bucket, and its number over the range.
      const perValue = new Map<string | null, { data: number[]; whole: number }>();
      const entry = (bv: string | null) => {
        let e = perValue.get(bv);
        if (!e) perValue.set(bv, (e = { data: new Array<number>(range.buckets.length).fill(0), whole: 0 }));
        return e;
      };
      for (const r of rows) {
        const e = entry(r.bv);
        const n = Number(r.n);
        if (r.bucket === null) e.whole = n;
        else {
          const i = bucketIndex.get(r.bucket);
          if (i !== undefined) e.data[i]! += n;
          if (math !== 'dau') e.whole += n;
        }
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
      const resultOf = (data: number[], whole: number, breakdownValue?: string): TrendsResult => {
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
      if (!breakdown) {
        const only = perValue.get(null);
        results.push(
          resultOf(only?.data ?? new Array<number>(range.buckets.length).fill(0), only?.whole ?? 0),
        );
        continue;
      }
      // The values with the most events (or persons) over the range, then "other" for the rest.
      const ranked = [...perValue.entries()]
        .map(([bv, e]) => ({ bv, n: e.whole }))
        .sort((a, b) => b.n - a.n || String(a.bv).localeCompare(String(b.bv)));
      const limit = breakdown.breakdown_limit ?? DEFAULT_BREAKDOWN_LIMIT;
      for (const { bv } of ranked.slice(0, limit)) {
        const e = perValue.get(bv)!;
        results.push(resultOf(e.data, e.whole, bv === null ? BREAKDOWN_NULL : bv));
      }
      const rest = ranked.slice(limit);
      if (rest.length === 0) continue;
      hasMore = true;
      if (math !== 'dau') {
        const data = new Array<number>(range.buckets.length).fill(0);
        let whole = 0;
        for (const { bv } of rest) {
          const e = perValue.get(bv)!;
          for (let i = 0; i < data.length; i++) data[i]! += e.data[i]!;
          whole += e.whole;
        }
        results.push(resultOf(data, whole, BREAKDOWN_OTHER));
        continue;
      }
      // Distinct persons of the other values together are not the sum of theirs: counted again,
      // per bucket and over the range, over the events of none of the top values.
      const top = ranked.slice(0, limit).map((r) => r.bv);
      const topValues = bind(top.filter((v): v is string => v !== null));
      const notTop = top.includes(null)
        ? `(${breakdownExpr} IS NOT NULL AND NOT (${breakdownExpr} = ANY(${topValues}::text[])))`
        : `(${breakdownExpr} IS NULL OR NOT (${breakdownExpr} = ANY(${topValues}::text[])))`;
      const other = await db.query<{ bucket: string | null; n: string }>(
        `SELECT to_char(${bucket}, 'YYYY-MM-DD HH24:MI:SS') AS bucket, ${counted} AS n
         FROM ${from} WHERE ${where} AND ${notTop} GROUP BY ${bucket}
       UNION ALL SELECT NULL, ${counted} FROM ${from} WHERE ${where} AND ${notTop}`,
        params,
      );
      const data = new Array<number>(range.buckets.length).fill(0);
      let whole = 0;
      for (const r of other.rows) {
        if (r.bucket === null) whole = Number(r.n);
        else {
          const i = bucketIndex.get(r.bucket);
          if (i !== undefined) data[i] = Number(r.n);
        }
      }
      results.push(resultOf(data, whole, BREAKDOWN_OTHER));
    }
    return results;
  }

  const resolved_date_range = { date_from: isoIn(range.from, timeZone), date_to: isoIn(range.to, timeZone) };
  const current = await seriesOver(range);
  if (query.compareFilter?.compare !== true) return { results: current, hasMore, resolved_date_range };
  const previous = await seriesOver(previousRange(range, interval));
  return {
    results: [
      ...current.map((r) => ({ ...r, compare: true, compare_label: 'current' as const })),
      ...previous.map((r) => ({ ...r, compare: true, compare_label: 'previous' as const })),
    ],
    hasMore,
    resolved_date_range,
  };
}

/** TrendsQuery as the engine runs it. */
export const trendsKind: QueryKind<TrendsQuery, TrendsPlan> = {
  kind: 'TrendsQuery',
  schema: trendsQuerySchema,
  plan: (query, team, now) => planTrends(query, team.timeZone, now),
  async execute(db, team, plan, now) {
    const answer = await runTrends(db, team.id, team.timeZone, plan, now);
    return {
      results: answer.results,
      hasMore: answer.hasMore,
      timezone: team.timeZone,
      resolved_date_range: answer.resolved_date_range,
    };
  },
};
