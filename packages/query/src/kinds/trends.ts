// TrendsQuery over the raw events table, in PostHog's request and response shapes: series of
// EventsNode (one event, or every event with `event: null`) per hour, day, week (from Sunday)
// or month bucket of the project's time zone, over relative or absolute date ranges. What each
// series counts (`math`):
// - `total` (events) and `dau` (distinct persons: a distinct id merged into another person
//   counts as that person, an id with no person as itself);
// - `weekly_active` and `monthly_active`: distinct persons over the 7 or 28 days ending with each
//   bucket (dau when the bucket is as long as the window);
// - `unique_session` (distinct `$session_id`) and `unique_group` (distinct groups of
//   `math_group_type_index`);
// - `sum`, `avg`, `min`, `max`, `median`, `p75`, `p90`, `p95` and `p99` of `math_property`
//   (numeric values only; others are skipped; an empty bucket is 0).
// Filters: event, person and group properties on the query and each series, and the project's
// test account filters with `filterTestAccounts`. Breakdowns: one property (event, person or
// group) or several (`breakdowns`), the top `breakdown_limit` values and "other". Compare with
// the previous period; `trendsFilter.formula` over the series (formula.ts); displays over time
// (line, bar, area, cumulative) or totals over the range (BoldNumber, ActionsTable, ActionsPie,
// ActionsBarValue: `aggregated_value`). Anything else a TrendsQuery may hold is refused by the
// schema with a 400 naming it, never ignored.
//
// Cost: one statement per series (two with a breakdown's "other" of a non-additive math), an index
// range scan of (team_id, event, timestamp) (or (team_id, timestamp) for all events) over the
// range, grouped by bucket; person maths, person filters and breakdowns join the person tables,
// group ones the groups table. weekly/monthly_active scan each bucket's window: up to 7 or 28
// times the rows of a daily count.
import { ValidationError } from '@sett/http';
import type { PlanBase, QueryKind, QueryTeam } from '../engine';
import { nodeFilters, propertyFilterSql, type PropertyGroup } from '../property-filters';
import { PERSON_KEY, PERSON_PROPERTIES, filtersReadPersons, personJoins } from '../persons-sql';
import type { Statements } from '../statements';
import {
  TRENDS_INTERVALS,
  dayText,
  isoIn,
  label,
  localText,
  previousRange,
  resolveRange,
  shift,
  wholeHourOffsets,
  type Interval,
  type ResolvedRange,
} from '../time-range';
import { evaluateFormula, parseFormula, type Formula } from './formula';

export { TRENDS_INTERVALS };
export type TrendsInterval = Interval;
export const TRENDS_MATH = [
  'total',
  'dau',
  'weekly_active',
  'monthly_active',
  'unique_session',
  'unique_group',
  'sum',
  'avg',
  'min',
  'max',
  'median',
  'p75',
  'p90',
  'p95',
  'p99',
] as const;
type MathKind = (typeof TRENDS_MATH)[number];
const PROPERTY_MATH = new Set<MathKind>(['sum', 'avg', 'min', 'max', 'median', 'p75', 'p90', 'p95', 'p99']);

/** A list of property filters or an AND/OR group: its content is checked by the filter parser
 * (property-filters.ts), which names the offending part. */
const PROPERTIES_SCHEMA = { type: ['array', 'object'] } as const;
const TIME_DISPLAYS = ['ActionsLineGraph', 'ActionsLineGraphCumulative', 'ActionsBar', 'ActionsAreaGraph'];
const TOTAL_DISPLAYS = ['BoldNumber', 'ActionsTable', 'ActionsPie', 'ActionsBarValue'];
const BREAKDOWN_TYPES = ['event', 'person', 'group'];
/** Trends joins the groups table: its filters may be on group properties. */
const GROUPED = ['event', 'person', 'group'];
const GROUP_INDEX = { type: 'integer', minimum: 0, maximum: 4 } as const;

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
          math_property: { type: ['string', 'null'], maxLength: 400 },
          math_property_type: { type: ['string', 'null'], maxLength: 100 },
          math_group_type_index: { type: ['integer', 'null'], minimum: 0, maximum: 4 },
          properties: PROPERTIES_SCHEMA,
        },
      },
    },
    properties: PROPERTIES_SCHEMA,
    filterTestAccounts: { type: 'boolean' },
    breakdownFilter: {
      type: 'object',
      additionalProperties: false,
      properties: {
        breakdown: { type: ['string', 'null'], maxLength: 400 },
        breakdown_type: { enum: [...BREAKDOWN_TYPES, null] },
        breakdown_group_type_index: { type: ['integer', 'null'], minimum: 0, maximum: 4 },
        breakdown_limit: { type: 'integer', minimum: 1, maximum: 1000 },
        breakdown_hide_other_aggregation: { type: ['boolean', 'null'] },
        breakdowns: {
          type: 'array',
          maxItems: 3,
          items: {
            type: 'object',
            required: ['property'],
            additionalProperties: false,
            properties: {
              property: { type: 'string', minLength: 1, maxLength: 400 },
              type: { enum: [...BREAKDOWN_TYPES, null] },
              group_type_index: { ...GROUP_INDEX, type: ['integer', 'null'] },
            },
          },
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
      properties: {
        display: { enum: [...TIME_DISPLAYS, ...TOTAL_DISPLAYS] },
        formula: { type: ['string', 'null'], maxLength: 400 },
        smoothingIntervals: { const: 1 },
        // How the client draws the answer; they do not change the numbers.
        showLegend: { type: 'boolean' },
        showValuesOnSeries: { type: 'boolean' },
        showLabelsOnSeries: { type: ['boolean', 'null'] },
        showPercentStackView: { type: 'boolean' },
        showMultipleYAxes: { type: ['boolean', 'null'] },
        showAlertThresholdLines: { type: 'boolean' },
        aggregationAxisFormat: { type: 'string', maxLength: 100 },
        aggregationAxisPrefix: { type: 'string', maxLength: 100 },
        aggregationAxisPostfix: { type: 'string', maxLength: 100 },
        decimalPlaces: { type: 'number' },
        yAxisScaleType: { enum: ['linear', 'log10', null] },
        hiddenLegendIndexes: { type: 'array', maxItems: 1000, items: { type: 'integer' } },
        resultCustomizationBy: { type: 'string', maxLength: 100 },
        resultCustomizations: { type: 'object' },
        goalLines: { type: 'array', maxItems: 100 },
      },
    },
    compareFilter: {
      type: 'object',
      additionalProperties: false,
      properties: { compare: { type: ['boolean', 'null'] } },
    },
    modifiers: { type: 'object', maxProperties: 0 },
    samplingFactor: { enum: [null, 1] },
    aggregation_group_type_index: { type: 'null' },
    dataColorTheme: { type: ['number', 'null'] },
    version: { type: 'number' },
  },
} as const;

export interface EventsNode {
  kind: 'EventsNode';
  event?: string | null;
  name?: string | null;
  custom_name?: string | null;
  math?: MathKind;
  math_property?: string | null;
  math_group_type_index?: number | null;
  properties?: unknown;
}

interface BreakdownProperty {
  property: string;
  type?: 'event' | 'person' | 'group' | null;
  group_type_index?: number | null;
}

export interface BreakdownFilter {
  breakdown?: string | null;
  breakdown_type?: 'event' | 'person' | 'group' | null;
  breakdown_group_type_index?: number | null;
  breakdown_limit?: number;
  breakdown_hide_other_aggregation?: boolean | null;
  breakdowns?: BreakdownProperty[];
}

/** The event properties whose values ingestion counts per hour (event_property_counts_hourly, by
 * the trigger its migration defines with this same list): a trends total broken down by one of
 * them reads those counts. */
export const BREAKDOWN_COUNTED_PROPERTIES = [
  '$browser',
  '$os',
  '$current_url',
  '$pathname',
  '$referring_domain',
] as const;

/** PostHog's breakdown values for "every other value" and for events without the property. */
export const BREAKDOWN_OTHER = '$$_posthog_breakdown_other_$$';
export const BREAKDOWN_NULL = '$$_posthog_breakdown_null_$$';
const DEFAULT_BREAKDOWN_LIMIT = 25;

export interface TrendsQuery {
  kind: 'TrendsQuery';
  series: EventsNode[];
  interval?: TrendsInterval;
  dateRange?: { date_from?: string | null; date_to?: string | null; explicitDate?: boolean | null };
  trendsFilter?: { display?: string; formula?: string | null };
  properties?: unknown;
  filterTestAccounts?: boolean;
  breakdownFilter?: BreakdownFilter;
  compareFilter?: { compare?: boolean | null };
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
    math_property?: string | null;
  } | null;
  aggregated_value?: number;
  breakdown_value?: string | string[];
  compare?: boolean;
  compare_label?: 'current' | 'previous';
}

// The person an event counts as and that person's properties now: persons-sql.ts.
const groupJoin = (n: number) =>
  `LEFT JOIN groups g${n} ON g${n}.team_id = e.team_id AND g${n}.group_type_index = ${n} AND g${n}.group_key = e.group_${n}`;
const SOURCES: Record<string, string> = {
  event: 'e.properties',
  person: PERSON_PROPERTIES,
  ...Object.fromEntries(
    [0, 1, 2, 3, 4].map((n) => [`group_${n}`, `COALESCE(g${n}.group_properties, '{}'::jsonb)`]),
  ),
};
// A property as a number: a JSON number as it is, a string that is a number the database holds
// exactly (property-filters.ts casts the same way); anything else NULL (skipped).
const numericOf = (json: string) => {
  const text = `(${json} #>> '{}')`;
  return `(CASE jsonb_typeof(${json}) WHEN 'number' THEN (${json})::numeric WHEN 'string' THEN CASE WHEN length(${text}) <= 2000 AND ${text} ~ '^[+-]?([0-9]+(\\.[0-9]*)?|\\.[0-9]+)([eE][+-]?[0-9]{1,3})?$' THEN ${text}::numeric END END)`;
};

/** Which person or group tables a filter group needs. */
function joinsOf(group: PropertyGroup | undefined, into: { properties: boolean; groups: Set<number> }): void {
  if (!group) return;
  if (filtersReadPersons([group])) into.properties = true;
  const text = JSON.stringify(group);
  for (const n of [0, 1, 2, 3, 4]) if (text.includes(`"type":"group_${n}"`)) into.groups.add(n);
}

/**
 * Most numbers one answer may hold: series × breakdown values (with other) × buckets × 2 with
 * compare. Checked before any SQL runs, from the query alone (the bound, not what the data
 * happens to hold). About 2.5 MB of JSON at the worst, labels included.
 */
export const MAX_ANSWER_POINTS = 50_000;

interface Breakdown {
  /** SQL of the value (text; a JSON array's text for several properties). */
  exprs: Array<{ source: string; key: string }>;
  multiple: boolean;
  limit: number;
  hideOther: boolean;
}

/** A TrendsQuery checked, parsed and costed: what runTrends executes. */
export interface TrendsPlan extends PlanBase {
  query: TrendsQuery;
  interval: TrendsInterval;
  range: ResolvedRange;
  queryFilters: PropertyGroup | undefined;
  testAccountFilters: PropertyGroup | undefined;
  seriesFilters: Array<PropertyGroup | undefined>;
  breakdown: Breakdown | undefined;
  formula: Formula | undefined;
  points: number;
}

function breakdownOf(filter: BreakdownFilter | undefined): Breakdown | undefined {
  if (!filter) return undefined;
  const sourceOf = (type: string | null | undefined, index: number | null | undefined, attr: string) => {
    if (type === 'group') {
      if (index === undefined || index === null)
        throw new ValidationError(`${attr}: a group breakdown needs its group type index.`, attr);
      return `group_${index}`;
    }
    return type ?? 'event';
  };
  const limit = filter.breakdown_limit ?? DEFAULT_BREAKDOWN_LIMIT;
  const hideOther = filter.breakdown_hide_other_aggregation === true;
  if (filter.breakdowns && filter.breakdowns.length > 0) {
    if (filter.breakdown)
      throw new ValidationError(
        'query.breakdownFilter: give either breakdown or breakdowns, not both.',
        'query.breakdownFilter.breakdown',
      );
    return {
      exprs: filter.breakdowns.map((b, i) => ({
        source: sourceOf(
          b.type,
          b.group_type_index,
          `query.breakdownFilter.breakdowns.${i}.group_type_index`,
        ),
        key: b.property,
      })),
      multiple: true,
      limit,
      hideOther,
    };
  }
  if (!filter.breakdown) return undefined;
  return {
    exprs: [
      {
        source: sourceOf(
          filter.breakdown_type,
          filter.breakdown_group_type_index,
          'query.breakdownFilter.breakdown_group_type_index',
        ),
        key: filter.breakdown,
      },
    ],
    multiple: false,
    limit,
    hideOther,
  };
}

/** Everything that can be refused without the database: dates, filters, and the answer's size. */
export function planTrends(query: TrendsQuery, team: QueryTeam, now: Date): TrendsPlan {
  const interval = query.interval ?? 'day';
  const range = resolveRange(query.dateRange, interval, team.timeZone, now);
  const queryFilters = nodeFilters(query.properties, 'query.properties', GROUPED);
  const testAccountFilters = query.filterTestAccounts
    ? nodeFilters(team.testAccountFilters, 'test_account_filters', GROUPED)
    : undefined;
  for (const [i, node] of query.series.entries()) {
    const math = node.math ?? 'total';
    if (PROPERTY_MATH.has(math) && !node.math_property)
      throw new ValidationError(
        `query.series.${i}.math_property is required with math ${math}.`,
        `query.series.${i}.math_property`,
      );
    if (
      math === 'unique_group' &&
      (node.math_group_type_index === undefined || node.math_group_type_index === null)
    )
      throw new ValidationError(
        `query.series.${i}.math_group_type_index is required with math unique_group.`,
        `query.series.${i}.math_group_type_index`,
      );
  }
  const seriesFilters = query.series.map((node, order) =>
    nodeFilters(node.properties, `query.series.${order}.properties`, GROUPED),
  );
  const breakdown = breakdownOf(query.breakdownFilter);
  const formula = query.trendsFilter?.formula
    ? parseFormula(query.trendsFilter.formula, query.series.length, 'query.trendsFilter.formula')
    : undefined;
  const compare = query.compareFilter?.compare === true ? 2 : 1;
  const values = breakdown ? breakdown.limit + 1 : 1;
  const points = query.series.length * values * range.buckets.length * compare;
  if (points > MAX_ANSWER_POINTS) {
    const parts = [
      `${query.series.length} series`,
      ...(breakdown ? [`${values} breakdown values (breakdown_limit and other)`] : []),
      `${range.buckets.length} ${interval} intervals`,
      ...(compare === 2 ? ['2 periods (compare)'] : []),
    ];
    const attr = breakdown
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
    testAccountFilters,
    seriesFilters,
    breakdown,
    formula,
    groups: [queryFilters, testAccountFilters, ...seriesFilters],
    points,
  };
}

// The bucket of an event (or of an hour of counts) in SQL: its wall-clock time in the zone,
// truncated; weeks from Sunday.
function bucketSql(interval: TrendsInterval, column = 'e.timestamp'): string {
  const local = `(${column} AT TIME ZONE $2)`;
  if (interval === 'week')
    return `date_trunc('day', ${local}) - make_interval(days => extract(dow from ${local})::int)`;
  return `date_trunc('${interval}', ${local})`;
}

/** What a series counts, as an aggregate over its rows. */
interface Measure {
  aggregate: string;
  /** For distinct counts: what is counted. Its rows are made distinct per bucket first, then
   * counted (a hash aggregate, where count(DISTINCT) sorts each bucket's rows). */
  distinct?: string;
  /** Sums over buckets give the number over the range (else a second pass counts it). */
  additive: boolean;
  person: boolean;
  group?: number;
  /** Distinct persons over this many days ending with each bucket. */
  rollingDays?: number;
}

const UNIT_DAYS: Record<TrendsInterval, number> = { hour: 1 / 24, day: 1, week: 7, month: 28 };

function measureOf(node: EventsNode, interval: TrendsInterval, bind: (v: unknown) => string): Measure {
  const math = node.math ?? 'total';
  const persons = `count(DISTINCT ${PERSON_KEY})`;
  const person = { aggregate: persons, distinct: PERSON_KEY, additive: false, person: true };
  switch (math) {
    case 'total':
      return { aggregate: 'count(*)', additive: true, person: false };
    case 'dau':
      return person;
    case 'weekly_active':
    case 'monthly_active': {
      const days = math === 'weekly_active' ? 7 : 28;
      // A bucket as long as the window is its distinct persons (PostHog: weekly_active by week is dau).
      if (UNIT_DAYS[interval] >= days) return person;
      return { ...person, rollingDays: days };
    }
    case 'unique_session':
      return {
        aggregate: `count(DISTINCT NULLIF(e.properties ->> '$session_id', ''))`,
        distinct: `NULLIF(e.properties ->> '$session_id', '')`,
        additive: false,
        person: false,
      };
    case 'unique_group': {
      const n = node.math_group_type_index!;
      return {
        aggregate: `count(DISTINCT e.group_${n})`,
        distinct: `e.group_${n}`,
        additive: false,
        person: false,
        group: n,
      };
    }
    default: {
      const value = numericOf(`(e.properties -> ${bind(node.math_property!)})`);
      const quantile = { median: 0.5, p75: 0.75, p90: 0.9, p95: 0.95, p99: 0.99 }[math as 'median'];
      const aggregate =
        quantile !== undefined
          ? `percentile_cont(${quantile}) WITHIN GROUP (ORDER BY ${value})`
          : `${math}(${value})`;
      return { aggregate, additive: math === 'sum', person: false };
    }
  }
}

export async function runTrends(
  db: Statements,
  team: QueryTeam,
  plan: TrendsPlan,
  now: Date,
): Promise<{
  results: TrendsResult[];
  hasMore: boolean;
  resolved_date_range: { date_from: string; date_to: string };
}> {
  const { query, interval, range, breakdown } = plan;
  const { id: teamId, timeZone } = team;
  const display = query.trendsFilter?.display ?? 'ActionsLineGraph';
  const totals = TOTAL_DISPLAYS.includes(display);
  let hasMore = false;

  // Every series of the query over one period (the asked one, or the one before it to compare).
  async function seriesOver(range: ResolvedRange): Promise<TrendsResult[]> {
    const results: TrendsResult[] = [];
    const bucketIndex = new Map(range.buckets.map((b, i) => [localText(b), i]));
    for (const [order, node] of query.series.entries()) {
      const event = node.event ?? null;
      const params: unknown[] = [teamId, timeZone, localText(range.from), localText(range.to)];
      const bind = (value: unknown) => `$${params.push(value)}`;
      const measure = measureOf(node, interval, bind);
      const joins = { identity: measure.person, properties: false, groups: new Set<number>() };
      if (measure.group !== undefined) joins.groups.add(measure.group);
      const conditions = ['e.team_id = $1'];
      if (event !== null) conditions.push(`e.event = ${bind(event)}`);
      for (const group of [plan.queryFilters, plan.testAccountFilters, plan.seriesFilters[order]])
        if (group) {
          conditions.push(propertyFilterSql(group, SOURCES, bind, now));
          joinsOf(group, joins);
        }
      let breakdownExpr = 'NULL::text';
      if (breakdown) {
        const parts = breakdown.exprs.map((b) => {
          if (b.source === 'person') joins.properties = true;
          if (b.source.startsWith('group_')) joins.groups.add(Number(b.source.slice(6)));
          return `(${SOURCES[b.source]} ->> ${bind(b.key)})`;
        });
        breakdownExpr = breakdown.multiple ? `(jsonb_build_array(${parts.join(', ')})::text)` : parts[0]!;
      }
      const from = `${personJoins(joins)} ${[...joins.groups].map(groupJoin).join(' ')}`;
      const where = conditions.join(' AND ');
      // Distinct counts over the range are not the sum of the buckets': a second pass counts them
      // (it ranks breakdown values and gives the totals displays).
      const wholePass = !measure.additive && !measure.rollingDays && (totals || breakdown !== undefined);
      // Events counted with no filter or breakdown: whole hours from the hourly counts, the partial
      // hours at either end of the range from the raw rows (exact: the counts change in the same
      // transaction as the events). Only where each UTC hour falls in one bucket of the zone.
      // A breakdown by one of the counted event properties reads their hourly counts the same way.
      const countedProperty =
        breakdown && !breakdown.multiple && breakdown.exprs[0]!.source === 'event'
          ? BREAKDOWN_COUNTED_PROPERTIES.find((k) => k === breakdown.exprs[0]!.key)
          : undefined;
      let countsServe =
        (node.math ?? 'total') === 'total' &&
        conditions.length === (event === null ? 1 : 2) &&
        (!breakdown || countedProperty !== undefined) &&
        wholeHourOffsets(range.from, range.to, timeZone);
      const lo = `($3::timestamp AT TIME ZONE $2)`;
      const hi = `(($4::timestamp + interval '1 second') AT TIME ZONE $2)`;
      // The first whole hour at or after lo, and the end of the last whole hour before hi.
      const h0 = `(date_trunc('hour', ${lo} - interval '1 microsecond', 'UTC') + interval '1 hour')`;
      const h1 = `greatest(date_trunc('hour', ${hi}, 'UTC'), ${h0})`;
      const eventCondition = event === null ? '' : ` AND c.event = $5`;
      if (countsServe && countedProperty !== undefined) {
        // A value too long to be kept in the counts, within the range: the raw rows answer.
        const own = [...params.slice(0, event === null ? 4 : 5), countedProperty];
        const overlong = await db.query<{ any: boolean }>(
          `SELECT EXISTS (SELECT 1 FROM event_property_counts_hourly c
             WHERE c.team_id = $1${eventCondition} AND c.property = $${own.length} AND c.overlong
               AND c.hour >= ${h0} AND c.hour < ${h1}) AS any`,
          own,
        );
        if (overlong.rows[0]?.any) countsServe = false;
      }
      const countsStatement = (bucket: string, valueExpr: string) => {
        const hours = `c.team_id = $1${eventCondition} AND c.hour >= ${h0} AND c.hour < ${h1}`;
        const countedHours = `SELECT ${bucketSql(interval, 'c.hour')} AS bucket, NULL::text AS bv, c.count AS n
             FROM event_counts_hourly c WHERE ${hours}`;
        // By value: each value's counts, and the events without the property (the hour's count
        // less its values'); a value whose counts net to nothing is not one the range holds.
        const byValue = () => {
          const key = bind(countedProperty);
          return `SELECT ${bucketSql(interval, 'c.hour')} AS bucket, c.value AS bv, c.count AS n
                FROM event_property_counts_hourly c
               WHERE ${hours} AND c.property = ${key} AND NOT c.overlong
              UNION ALL
              SELECT ${bucketSql(interval, 'c.hour')}, NULL, -c.count FROM event_property_counts_hourly c
               WHERE ${hours} AND c.property = ${key}
              UNION ALL
              ${countedHours}`;
        };
        return `SELECT to_char(bucket, 'YYYY-MM-DD HH24:MI:SS') AS bucket, bv, sum(n) AS n FROM (
            ${countedProperty === undefined ? countedHours : byValue()}
            UNION ALL
            SELECT ${bucket}, ${valueExpr}, 1 FROM events e
             WHERE ${where} AND e.timestamp >= ${lo} AND e.timestamp < least(${h0}, ${hi})
            UNION ALL
            SELECT ${bucket}, ${valueExpr}, 1 FROM events e
             WHERE ${where} AND e.timestamp >= ${h1} AND e.timestamp < ${hi}
          ) s GROUP BY bucket, bv HAVING sum(n) <> 0`;
      };

      /** The rows (bucket, value, number) of this series over `extra` conditions. */
      const statement = (extra: string, valueExpr: string) => {
        if (measure.rollingDays && measure.distinct && interval === 'day') {
          // Distinct persons over the `days` days ending with each day, from one pass: each
          // (value, person, local day) once; a person's active day d covers the windows ending on
          // d to d + days - 1, less those its previous active day covered already, so each adds
          // +1 where its new coverage starts and -1 where it ends, and a window's count is the
          // running sum of those steps up to its day. Reads each event once instead of `days`
          // times.
          const days = measure.rollingDays;
          return `WITH active AS (
              SELECT DISTINCT ${valueExpr} AS bv, ${measure.distinct} AS pk, (e.timestamp AT TIME ZONE $2)::date AS day
                FROM events e ${from}
               WHERE ${where}${extra}
                 AND e.timestamp >= (($3::timestamp - interval '${days - 1} days') AT TIME ZONE $2)
                 AND e.timestamp < (($4::timestamp + interval '1 second') AT TIME ZONE $2)
                 AND ${measure.distinct} IS NOT NULL),
            spans AS (SELECT bv, day, lag(day) OVER (PARTITION BY bv, pk ORDER BY day) AS prev FROM active),
            steps AS (
              SELECT bv, at, sum(d) AS d FROM (
                SELECT bv, CASE WHEN prev IS NULL THEN day ELSE greatest(day, prev + ${days}) END AS at, 1 AS d FROM spans
                UNION ALL SELECT bv, day + ${days}, -1 FROM spans) x
              GROUP BY 1, 2),
            running AS (SELECT bv, at, sum(d) OVER (PARTITION BY bv ORDER BY at) AS n FROM steps)
            SELECT to_char(g.day, 'YYYY-MM-DD HH24:MI:SS') AS bucket, v.bv,
                   (SELECT r.n FROM running r WHERE r.bv IS NOT DISTINCT FROM v.bv AND r.at <= g.day::date
                     ORDER BY r.at DESC LIMIT 1) AS n
              FROM generate_series($3::date::timestamp, $4::date::timestamp, interval '1 day') AS g(day)
             CROSS JOIN (SELECT DISTINCT bv FROM steps) v`;
        }
        if (measure.rollingDays) {
          // Each bucket's window: the `rollingDays` days before its end.
          const unit = ({ hour: 'h', day: 'd', week: 'w', month: 'm' } as const)[interval];
          const ends = range.buckets.map((b) => localText(shift(b, unit, 1)));
          const starts = range.buckets.map((b) => localText(b));
          return `SELECT to_char(w.start, 'YYYY-MM-DD HH24:MI:SS') AS bucket, ${valueExpr} AS bv, ${measure.aggregate} AS n
            FROM unnest(${bind(starts)}::timestamp[], ${bind(ends)}::timestamp[]) AS w(start, finish)
            JOIN events e ON e.team_id = $1
             AND e.timestamp >= ((w.finish - interval '${measure.rollingDays} days') AT TIME ZONE $2)
             AND e.timestamp < (w.finish AT TIME ZONE $2)
             AND e.timestamp < (($4::timestamp + interval '1 second') AT TIME ZONE $2)
             AND e.timestamp >= (($3::timestamp - interval '${measure.rollingDays + 31} days') AT TIME ZONE $2)
            ${from}
           WHERE ${where}${extra} GROUP BY w.start, 2`;
        }
        const bucket = bucketSql(interval);
        if (countsServe) return countsStatement(bucket, valueExpr);
        const inRange = `e.timestamp >= ($3::timestamp AT TIME ZONE $2) AND e.timestamp < (($4::timestamp + interval '1 second') AT TIME ZONE $2)`;
        if (measure.distinct) {
          // Each (bucket, value, counted) once, then counted. The range's own count (a breakdown's
          // ranking, the totals displays) is taken from those same rows, not from a second scan.
          const rows = `SELECT DISTINCT ${bucket} AS bucket, ${valueExpr} AS bv, ${measure.distinct} AS pk
            FROM events e ${from} WHERE ${where} AND ${inRange}${extra}`;
          const perBucket = `SELECT to_char(bucket, 'YYYY-MM-DD HH24:MI:SS') AS bucket, bv, count(pk) AS n
            FROM d GROUP BY d.bucket, bv`;
          if (!wholePass) return `WITH d AS (${rows}) ${perBucket}`;
          return `WITH d AS MATERIALIZED (${rows}) ${perBucket}
            UNION ALL SELECT NULL, bv, count(pk) FROM (SELECT DISTINCT bv, pk FROM d) w GROUP BY bv`;
        }
        let sql = `SELECT to_char(${bucket}, 'YYYY-MM-DD HH24:MI:SS') AS bucket, ${valueExpr} AS bv, ${measure.aggregate} AS n
          FROM events e ${from} WHERE ${where} AND ${inRange}${extra} GROUP BY ${bucket}, 2`;
        if (wholePass)
          sql += ` UNION ALL SELECT NULL, ${valueExpr}, ${measure.aggregate} FROM events e ${from}
            WHERE ${where} AND ${inRange}${extra} GROUP BY 2`;
        return sql;
      };
      const { rows } = await db.query<{ bucket: string | null; bv: string | null; n: string | null }>(
        statement('', breakdownExpr),
        params,
      );

      // One pass over the rows: each value's numbers per bucket, and its number over the range.
      const perValue = new Map<string | null, { data: number[]; whole: number }>();
      const entry = (bv: string | null) => {
        let e = perValue.get(bv);
        if (!e) perValue.set(bv, (e = { data: new Array<number>(range.buckets.length).fill(0), whole: 0 }));
        return e;
      };
      for (const r of rows) {
        const e = entry(r.bv);
        const n = r.n === null ? 0 : Number(r.n);
        if (r.bucket === null) e.whole = n;
        else {
          const i = bucketIndex.get(r.bucket);
          if (i !== undefined) e.data[i]! += n;
          if (measure.additive) e.whole += n;
        }
      }
      // A rolling count over the range is its last window's.
      if (measure.rollingDays) for (const e of perValue.values()) e.whole = e.data.at(-1) ?? 0;

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
          math: node.math ?? 'total',
          ...(node.math_property ? { math_property: node.math_property } : {}),
        },
      };
      const resultOf = (data: number[], whole: number, value?: string | string[]): TrendsResult => {
        const shown = display === 'ActionsLineGraphCumulative' ? cumulative(data) : data;
        const count = data.reduce((a, b) => a + b, 0);
        const result: TrendsResult = {
          data: shown,
          ...base,
          count,
          label:
            value === undefined
              ? (node.custom_name ?? name)
              : Array.isArray(value)
                ? value.join('::')
                : value,
        };
        if (value !== undefined) result.breakdown_value = value;
        if (totals) result.aggregated_value = measure.additive ? count : whole;
        return result;
      };
      const valueOf = (bv: string | null): string | string[] => {
        if (!breakdown?.multiple) return bv === null ? BREAKDOWN_NULL : bv;
        return (JSON.parse(bv!) as Array<string | null>).map((v) => v ?? BREAKDOWN_NULL);
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
      for (const { bv } of ranked.slice(0, breakdown.limit)) {
        const e = perValue.get(bv)!;
        results.push(resultOf(e.data, e.whole, valueOf(bv)));
      }
      const rest = ranked.slice(breakdown.limit);
      if (rest.length === 0) continue;
      hasMore = true;
      if (breakdown.hideOther) continue;
      const otherValue = breakdown.multiple ? breakdown.exprs.map(() => BREAKDOWN_OTHER) : BREAKDOWN_OTHER;
      if (measure.additive) {
        const data = new Array<number>(range.buckets.length).fill(0);
        let whole = 0;
        for (const { bv } of rest) {
          const e = perValue.get(bv)!;
          for (let i = 0; i < data.length; i++) data[i]! += e.data[i]!;
          whole += e.whole;
        }
        results.push(resultOf(data, whole, otherValue));
        continue;
      }
      // Distinct counts (and averages, quantiles) of the other values together are not made of
      // theirs: counted again, over the events of none of the top values.
      const top = ranked.slice(0, breakdown.limit).map((r) => r.bv);
      const topValues = bind(top.filter((v): v is string => v !== null));
      const notTop = top.includes(null)
        ? ` AND (${breakdownExpr} IS NOT NULL AND NOT (${breakdownExpr} = ANY(${topValues}::text[])))`
        : ` AND (${breakdownExpr} IS NULL OR NOT (${breakdownExpr} = ANY(${topValues}::text[])))`;
      const other = await db.query<{ bucket: string | null; n: string | null }>(
        statement(notTop, 'NULL::text'),
        params,
      );
      const data = new Array<number>(range.buckets.length).fill(0);
      let whole = 0;
      for (const r of other.rows) {
        const n = r.n === null ? 0 : Number(r.n);
        if (r.bucket === null) whole = n;
        else {
          const i = bucketIndex.get(r.bucket);
          if (i !== undefined) data[i] = n;
        }
      }
      if (measure.rollingDays) whole = data.at(-1) ?? 0;
      results.push(resultOf(data, whole, otherValue));
    }
    return plan.formula ? applyFormula(plan.formula, query.trendsFilter!.formula!, results, totals) : results;
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

function cumulative(data: number[]): number[] {
  let sum = 0;
  return data.map((n) => (sum += n));
}

/**
 * One result per breakdown value (or one without a breakdown): the formula over the series'
 * numbers bucket by bucket, as PostHog draws a formula (the series themselves are not answered).
 */
function applyFormula(
  formula: Formula,
  text: string,
  results: TrendsResult[],
  totals: boolean,
): TrendsResult[] {
  const seriesCount = Math.max(...results.map((r) => r.action!.order)) + 1;
  const byValue = new Map<string, TrendsResult[]>();
  for (const r of results) {
    const key = JSON.stringify(r.breakdown_value ?? null);
    let list = byValue.get(key);
    if (!list) byValue.set(key, (list = new Array<TrendsResult>(seriesCount)));
    list[r.action!.order] = r;
  }
  const out: TrendsResult[] = [];
  for (const [, list] of byValue) {
    const first = list.find((r) => r !== undefined)!;
    const buckets = first.data.length;
    const data = Array.from({ length: buckets }, (_, i) =>
      evaluateFormula(formula, (s) => list[s]?.data[i] ?? 0),
    );
    const result: TrendsResult = {
      data,
      labels: first.labels,
      days: first.days,
      count: data.reduce((a, b) => a + b, 0),
      label: `Formula (${text})`,
      action: null,
    };
    if (first.breakdown_value !== undefined) result.breakdown_value = first.breakdown_value;
    if (totals) result.aggregated_value = evaluateFormula(formula, (s) => list[s]?.aggregated_value ?? 0);
    out.push(result);
  }
  return out;
}

/** TrendsQuery as the engine runs it. */
export const trendsKind: QueryKind<TrendsQuery, TrendsPlan> = {
  kind: 'TrendsQuery',
  schema: trendsQuerySchema,
  plan: (query, team, now) => planTrends(query, team, now),
  async execute(db, team, plan, now) {
    const answer = await runTrends(db, team, plan, now);
    return {
      results: answer.results,
      hasMore: answer.hasMore,
      timezone: team.timeZone,
      resolved_date_range: answer.resolved_date_range,
    };
  },
};
