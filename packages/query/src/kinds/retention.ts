// RetentionQuery: of the persons who did the target event in a period (a cohort), how many did
// the returning event 1, 2, … periods later, in PostHog's shapes. `retentionType`
// retention_first_time (the default: a person belongs to the cohort of the period of their
// first target event ever) or retention_recurring (to every period they did it in); `period`
// Hour, Day (the default), Week (from Sunday) or Month, in the project's time zone;
// `totalIntervals` (default 8) periods per cohort; `targetEntity` and `returningEntity`
// (events, with their own property filters); query property filters; a breakdown by a person
// property. Cohorts: `totalIntervals` periods ending at date_to's (default now), or from
// date_from's period to date_to's when date_from is given. Answer: one row per cohort (and
// breakdown value), `{date, label, values: [{count, label}]}`, value 0 the cohort's size; a
// cohort has values for the periods up to the last cohort's (and the current one), PostHog's
// triangle.
//
// Cost: two statements over the target and the returning events of the range (first time:
// every target event of the project, to find each person's first), each grouped per person and
// period, joined on the person.
import { ValidationError } from '@sett/http';
import type { PlanBase, QueryKind, QueryTeam } from '../engine';
import { PERSON_KEY, PERSON_PROPERTIES, filtersReadPersons, personJoins } from '../persons-sql';
import { combine, nodeFilters, propertyFilterSql, type PropertyGroup } from '../property-filters';
import {
  bucketStart,
  isoIn,
  localOf,
  localText,
  parseDate,
  shift,
  wallMs,
  type Interval,
  type Local,
} from '../time-range';
import { BREAKDOWN_NULL } from './trends';

const PROPERTIES_SCHEMA = { type: ['array', 'object'] } as const;
const ENTITY = {
  type: 'object',
  additionalProperties: false,
  properties: {
    id: { type: ['string', 'null'], maxLength: 400 },
    name: { type: ['string', 'null'], maxLength: 400 },
    custom_name: { type: ['string', 'null'], maxLength: 400 },
    type: { const: 'events' },
    kind: { const: 'EventsNode' },
    order: { type: ['integer', 'null'] },
    uuid: { type: ['string', 'null'], maxLength: 100 },
    properties: PROPERTIES_SCHEMA,
  },
} as const;
const PERIODS = ['Hour', 'Day', 'Week', 'Month'] as const;
type Period = (typeof PERIODS)[number];

export const retentionQuerySchema = {
  type: 'object',
  required: ['kind'],
  additionalProperties: false,
  properties: {
    kind: { const: 'RetentionQuery' },
    dateRange: {
      type: 'object',
      additionalProperties: false,
      properties: {
        date_from: { type: ['string', 'null'], maxLength: 40 },
        date_to: { type: ['string', 'null'], maxLength: 40 },
        explicitDate: { type: ['boolean', 'null'] },
      },
    },
    properties: PROPERTIES_SCHEMA,
    filterTestAccounts: { type: 'boolean' },
    breakdownFilter: {
      type: 'object',
      additionalProperties: false,
      properties: {
        breakdown: { type: ['string', 'null'], maxLength: 400 },
        breakdown_type: { enum: ['person', null] },
        breakdown_limit: { type: 'integer', minimum: 1, maximum: 1000 },
      },
    },
    retentionFilter: {
      type: 'object',
      additionalProperties: false,
      properties: {
        retentionType: { enum: ['retention_first_time', 'retention_recurring'] },
        period: { enum: [...PERIODS] },
        totalIntervals: { type: 'integer', minimum: 1, maximum: 500 },
        targetEntity: ENTITY,
        returningEntity: ENTITY,
        // How the client draws the answer; it does not change the numbers.
        retentionReference: { enum: ['total', 'previous'] },
        display: { type: 'string', maxLength: 100 },
        dashboardDisplay: { type: 'string', maxLength: 100 },
        showMean: { type: 'boolean' },
        meanRetentionCalculation: { type: 'string', maxLength: 100 },
        cumulative: { const: false },
        showTrendLines: { type: 'boolean' },
      },
    },
    modifiers: { type: 'object', maxProperties: 0 },
    samplingFactor: { enum: [null, 1] },
    version: { type: 'number' },
  },
} as const;

interface Entity {
  id?: string | null;
  properties?: unknown;
}

export interface RetentionQuery {
  kind: 'RetentionQuery';
  dateRange?: { date_from?: string | null; date_to?: string | null };
  properties?: unknown;
  filterTestAccounts?: boolean;
  breakdownFilter?: { breakdown?: string | null; breakdown_type?: 'person' | null; breakdown_limit?: number };
  retentionFilter?: {
    retentionType?: 'retention_first_time' | 'retention_recurring';
    period?: Period;
    totalIntervals?: number;
    targetEntity?: Entity;
    returningEntity?: Entity;
  };
}

export interface RetentionPlan extends PlanBase {
  query: RetentionQuery;
  period: Period;
  interval: Interval;
  intervals: number;
  /** Start of the first cohort's period. */
  start: Local;
  cohorts: number;
  /** The current period's index (values past it are not answered). */
  nowIndex: number;
  targetFilters: PropertyGroup | undefined;
  returningFilters: PropertyGroup | undefined;
  queryFilters: PropertyGroup | undefined;
  breakdown: string | undefined;
}

const INTERVAL_OF: Record<Period, Interval> = { Hour: 'hour', Day: 'day', Week: 'week', Month: 'month' };
const UNIT_OF: Record<Period, 'h' | 'd' | 'w' | 'm'> = { Hour: 'h', Day: 'd', Week: 'w', Month: 'm' };

/** Whole periods from `a` to `b` (both period starts). */
function periodsBetween(a: Local, b: Local, period: Period): number {
  if (period === 'Month') return (b.y - a.y) * 12 + (b.mo - a.mo);
  const unit = period === 'Hour' ? 3_600_000 : period === 'Day' ? 86_400_000 : 604_800_000;
  return Math.round((wallMs(b) - wallMs(a)) / unit);
}

export function planRetention(query: RetentionQuery, team: QueryTeam, nowDate: Date): RetentionPlan {
  const timeZone = team.timeZone;
  const r = query.retentionFilter ?? {};
  const period = r.period ?? 'Day';
  const interval = INTERVAL_OF[period];
  const intervals = r.totalIntervals ?? 8;
  const now = localOf(nowDate, timeZone);
  const toValue = query.dateRange?.date_to;
  const to = bucketStart(toValue ? parseDate(toValue, now, 'dateRange.date_to', true) : now, interval);
  const fromValue = query.dateRange?.date_from;
  const start = fromValue
    ? bucketStart(parseDate(fromValue, now, 'dateRange.date_from', false), interval)
    : shift(to, UNIT_OF[period], -(intervals - 1));
  const cohorts = periodsBetween(start, to, period) + 1;
  if (cohorts < 1)
    throw new ValidationError('dateRange.date_from is after dateRange.date_to.', 'dateRange.date_from');
  const breakdown = query.breakdownFilter?.breakdown ?? undefined;
  const values = breakdown ? (query.breakdownFilter?.breakdown_limit ?? 25) + 1 : 1;
  if (cohorts * intervals * values > 50_000)
    throw new ValidationError(
      `The answer would hold up to ${cohorts * intervals * values} numbers (${cohorts} cohorts × ${intervals} periods${breakdown ? ` × ${values} breakdown values` : ''}); at most 50,000. Narrow the date range or retentionFilter.totalIntervals.`,
      'query.retentionFilter.totalIntervals',
    );
  const targetFilters = nodeFilters(
    r.targetEntity?.properties,
    'query.retentionFilter.targetEntity.properties',
  );
  const returningFilters = nodeFilters(
    r.returningEntity?.properties,
    'query.retentionFilter.returningEntity.properties',
  );
  const queryFilters = combine(
    nodeFilters(query.properties, 'query.properties'),
    query.filterTestAccounts ? nodeFilters(team.testAccountFilters, 'test_account_filters') : undefined,
  );
  return {
    query,
    period,
    interval,
    intervals,
    start,
    cohorts,
    nowIndex: periodsBetween(start, bucketStart(now, interval), period),
    targetFilters,
    returningFilters,
    queryFilters,
    breakdown: breakdown || undefined,
    groups: [queryFilters, targetFilters, returningFilters],
  };
}

/** The period index of an event, in SQL: whole periods from the first cohort's start. */
function periodIndexSql(period: Period, startParam: string, zoneParam: string): string {
  const local = `(e.timestamp AT TIME ZONE ${zoneParam})`;
  if (period === 'Month')
    return `((extract(year FROM ${local})::int * 12 + extract(month FROM ${local})::int) - (extract(year FROM ${startParam}::timestamp)::int * 12 + extract(month FROM ${startParam}::timestamp)::int))`;
  const seconds = period === 'Hour' ? 3600 : period === 'Day' ? 86400 : 604800;
  return `floor(extract(epoch FROM (${local} - ${startParam}::timestamp)) / ${seconds})::int`;
}

export const retentionKind: QueryKind<RetentionQuery, RetentionPlan> = {
  kind: 'RetentionQuery',
  schema: retentionQuerySchema,
  plan: (query, team, now) => planRetention(query, team, now),
  async execute(db, team, plan, now) {
    const r = plan.query.retentionFilter ?? {};
    const firstTime = (r.retentionType ?? 'retention_first_time') === 'retention_first_time';
    // Returning events count up to the end of the last cohort's period (date_to's), as PostHog's
    // triangle: cohort c has values for the periods up to the last one.
    const end = shift(plan.start, UNIT_OF[plan.period], plan.cohorts);
    const params: unknown[] = [team.id, team.timeZone, localText(plan.start), localText(end)];
    const bind = (value: unknown) => `$${params.push(value)}`;
    const sources = { event: 'e.properties', person: PERSON_PROPERTIES };
    const index = periodIndexSql(plan.period, '$3', '$2');
    const inRange = `e.timestamp >= ($3::timestamp AT TIME ZONE $2) AND e.timestamp < ($4::timestamp AT TIME ZONE $2)`;
    const conditions = (entity: Entity | undefined, group: PropertyGroup | undefined) => {
      const parts = ['e.team_id = $1'];
      if (entity?.id) parts.push(`e.event = ${bind(entity.id)}`);
      if (group) parts.push(propertyFilterSql(group, sources, bind, now));
      if (plan.queryFilters) parts.push(propertyFilterSql(plan.queryFilters, sources, bind, now));
      return parts.join(' AND ');
    };
    const personKey = PERSON_KEY;
    const breakdownExpr = plan.breakdown ? `(${sources.person} ->> ${bind(plan.breakdown)})` : 'NULL::text';
    // persons itself only where a filter or the breakdown (always a person property) reads them.
    const readsPersons = plan.breakdown !== undefined || filtersReadPersons(plan.groups);
    const join = personJoins({ identity: true, properties: readsPersons });
    const target = firstTime
      ? `SELECT pk, min(i) AS i, min(bv) AS bv FROM (
           SELECT ${personKey} AS pk, ${breakdownExpr} AS bv, e.timestamp AS ts,
                  ${index} AS i, rank() OVER (PARTITION BY ${personKey} ORDER BY e.timestamp) AS nth
             FROM events e ${join} WHERE ${conditions(r.targetEntity, plan.targetFilters)}) first
          WHERE nth = 1 GROUP BY pk`
      : `SELECT DISTINCT ${personKey} AS pk, ${index} AS i, ${breakdownExpr} AS bv
           FROM events e ${join} WHERE ${conditions(r.targetEntity, plan.targetFilters)} AND ${inRange}`;
    const returning = `SELECT DISTINCT ${personKey} AS pk, ${index} AS i
         FROM events e ${join} WHERE ${conditions(r.returningEntity, plan.returningFilters)} AND ${inRange}`;
    // count(*) in the join counts persons: cohort holds one row per (person, period) (first
    // time: one per person; recurring: DISTINCT, and a person's breakdown value is the same on
    // all their rows) and ret one per (person, period), so a (cohort, offset, value) group
    // meets each person at most once. A DISTINCT aggregate would sort every group instead.
    const sql = `WITH target AS (${target}),
        cohort AS (SELECT pk, i, bv FROM target WHERE i >= 0 AND i < ${bind(plan.cohorts)}),
        ret AS (${returning})
      SELECT c.i AS cohort, 0 AS k, c.bv, count(*) AS n FROM cohort c GROUP BY 1, 3
      UNION ALL
      SELECT c.i, r.i - c.i, c.bv, count(*) FROM cohort c
        JOIN ret r ON r.pk = c.pk AND r.i > c.i AND r.i - c.i < ${bind(plan.intervals)}
       GROUP BY 1, 2, 3`;
    const { rows } = await db.query<{ cohort: number; k: number; bv: string | null; n: string }>(sql, params);

    // One row per cohort (and breakdown value): values up to the current period.
    const byValue = new Map<string, number[][]>();
    for (const row of rows) {
      const value = plan.breakdown ? (row.bv ?? BREAKDOWN_NULL) : '';
      let grid = byValue.get(value);
      if (!grid) byValue.set(value, (grid = Array.from({ length: plan.cohorts }, () => [])));
      grid[row.cohort]![row.k] = Number(row.n);
    }
    if (byValue.size === 0)
      byValue.set(
        plan.breakdown ? BREAKDOWN_NULL : '',
        Array.from({ length: plan.cohorts }, () => []),
      );
    const ranked = [...byValue.entries()].sort(
      (a, b) =>
        b[1].reduce((s, c) => s + (c[0] ?? 0), 0) - a[1].reduce((s, c) => s + (c[0] ?? 0), 0) ||
        a[0].localeCompare(b[0]),
    );
    const limit = plan.query.breakdownFilter?.breakdown_limit ?? 25;
    const results: Array<Record<string, unknown>> = [];
    for (const [value, grid] of ranked.slice(0, plan.breakdown ? limit : 1))
      for (let c = 0; c < plan.cohorts; c++) {
        const available = Math.max(
          0,
          Math.min(plan.intervals, Math.min(plan.cohorts, plan.nowIndex + 1) - c),
        );
        const row: Record<string, unknown> = {
          date: isoIn(shift(plan.start, UNIT_OF[plan.period], c), team.timeZone),
          label: `${plan.period} ${c}`,
          values: Array.from({ length: available }, (_, k) => ({
            count: grid[c]![k] ?? 0,
            label: `${plan.period} ${k}`,
          })),
        };
        if (plan.breakdown) row.breakdown_value = value;
        results.push(row);
      }
    return { results, hasMore: plan.breakdown ? ranked.length > limit : false, timezone: team.timeZone };
  },
};
