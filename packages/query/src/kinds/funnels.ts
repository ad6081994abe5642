// FunnelsQuery: how many persons went through 2 to 20 steps within a conversion window, in
// PostHog's request and response shapes. Steps are EventsNodes with their own property filters;
// `funnelOrderType` ordered (the default), strict or unordered; `funnelWindowInterval` with its
// unit (default 14 days); `exclusions` between steps; a breakdown by an event or person property,
// attributed to the first step of the attempt that counts; `funnelVizType` steps (the default)
// or trends (the conversion rate per interval of the first step). Which attempt counts, and how
// far it got, is funnel-steps.ts (pure, unit-tested): a person counts once per funnel, with the
// attempt that reached the furthest step, the earliest of those.
//
// Cost: one statement. It reads every event of the range that matches a step or an exclusion
// (strict order: every event of the range, since any event between two steps breaks them), with
// its person, and returns them grouped per person as arrays in time order; the steps are then
// walked per person in the process, linear in those events.
import { ValidationError } from '@sett/http';
import type { PlanBase, QueryKind, QueryTeam } from '../engine';
import { PERSON_KEY, PERSON_PROPERTIES, filtersReadPersons, personJoins } from '../persons-sql';
import { combine, nodeFilters, propertyFilterSql, type PropertyGroup } from '../property-filters';
import {
  TRENDS_INTERVALS,
  bucketStart,
  dayText,
  isoIn,
  label,
  localOf,
  localText,
  resolveRange,
  type Interval,
  type ResolvedRange,
} from '../time-range';
import { bestAttempt, type Exclusion, type FunnelOrder, type PersonEvent } from './funnel-steps';
import { BREAKDOWN_NULL, BREAKDOWN_OTHER } from './trends';

const PROPERTIES_SCHEMA = { type: ['array', 'object'] } as const;
const EVENTS_NODE = {
  type: 'object',
  required: ['kind'],
  additionalProperties: false,
  properties: {
    kind: { const: 'EventsNode' },
    event: { type: ['string', 'null'], maxLength: 400 },
    name: { type: ['string', 'null'], maxLength: 400 },
    custom_name: { type: ['string', 'null'], maxLength: 400 },
    math: { const: 'total' },
    properties: PROPERTIES_SCHEMA,
  },
} as const;
const WINDOW_UNITS = ['second', 'minute', 'hour', 'day', 'week', 'month'] as const;

export const funnelsQuerySchema = {
  type: 'object',
  required: ['kind', 'series'],
  additionalProperties: false,
  properties: {
    kind: { const: 'FunnelsQuery' },
    series: { type: 'array', minItems: 2, maxItems: 20, items: EVENTS_NODE },
    dateRange: {
      type: 'object',
      additionalProperties: false,
      properties: {
        date_from: { type: ['string', 'null'], maxLength: 40 },
        date_to: { type: ['string', 'null'], maxLength: 40 },
        explicitDate: { type: ['boolean', 'null'] },
      },
    },
    interval: { enum: [...TRENDS_INTERVALS] },
    properties: PROPERTIES_SCHEMA,
    filterTestAccounts: { type: 'boolean' },
    breakdownFilter: {
      type: 'object',
      additionalProperties: false,
      properties: {
        breakdown: { type: ['string', 'null'], maxLength: 400 },
        breakdown_type: { enum: ['event', 'person', null] },
        breakdown_limit: { type: 'integer', minimum: 1, maximum: 1000 },
      },
    },
    funnelsFilter: {
      type: 'object',
      additionalProperties: false,
      properties: {
        funnelOrderType: { enum: ['ordered', 'strict', 'unordered'] },
        funnelVizType: { enum: ['steps', 'trends'] },
        funnelWindowInterval: { type: 'integer', minimum: 1, maximum: 100_000 },
        funnelWindowIntervalUnit: { enum: [...WINDOW_UNITS] },
        funnelStepReference: { enum: ['total', 'previous'] },
        breakdownAttributionType: { const: 'first_touch' },
        funnelFromStep: { type: 'integer', minimum: 0, maximum: 19 },
        funnelToStep: { type: 'integer', minimum: 1, maximum: 19 },
        exclusions: {
          type: 'array',
          maxItems: 10,
          items: {
            type: 'object',
            required: ['kind', 'funnelFromStep', 'funnelToStep'],
            additionalProperties: false,
            properties: {
              ...EVENTS_NODE.properties,
              funnelFromStep: { type: 'integer', minimum: 0, maximum: 19 },
              funnelToStep: { type: 'integer', minimum: 1, maximum: 19 },
            },
          },
        },
        // How the client draws the answer; it does not change the numbers.
        layout: { enum: ['horizontal', 'vertical'] },
        hiddenLegendBreakdowns: { type: 'array', maxItems: 1000, items: { type: 'string' } },
        resultCustomizations: { type: 'object' },
      },
    },
    modifiers: { type: 'object', maxProperties: 0 },
    samplingFactor: { enum: [null, 1] },
    version: { type: 'number' },
  },
} as const;

interface FunnelNode {
  kind: 'EventsNode';
  event?: string | null;
  name?: string | null;
  custom_name?: string | null;
  properties?: unknown;
}

export interface FunnelsQuery {
  kind: 'FunnelsQuery';
  series: FunnelNode[];
  dateRange?: { date_from?: string | null; date_to?: string | null };
  interval?: Interval;
  properties?: unknown;
  filterTestAccounts?: boolean;
  breakdownFilter?: {
    breakdown?: string | null;
    breakdown_type?: 'event' | 'person' | null;
    breakdown_limit?: number;
  };
  funnelsFilter?: {
    funnelOrderType?: FunnelOrder;
    funnelVizType?: 'steps' | 'trends';
    funnelWindowInterval?: number;
    funnelWindowIntervalUnit?: (typeof WINDOW_UNITS)[number];
    funnelFromStep?: number;
    funnelToStep?: number;
    exclusions?: Array<FunnelNode & { funnelFromStep: number; funnelToStep: number }>;
  };
}

export interface FunnelsPlan extends PlanBase {
  query: FunnelsQuery;
  range: ResolvedRange;
  interval: Interval;
  order: FunnelOrder;
  windowEnd: (start: number) => number;
  exclusions: Exclusion[];
  stepFilters: Array<PropertyGroup | undefined>;
  exclusionFilters: Array<PropertyGroup | undefined>;
  queryFilters: PropertyGroup | undefined;
  breakdown: { key: string; type: 'event' | 'person'; limit: number } | undefined;
}

const DEFAULT_BREAKDOWN_LIMIT = 25;
const UNIT_MS = { second: 1000, minute: 60_000, hour: 3_600_000, day: 86_400_000, week: 604_800_000 };

export function planFunnels(query: FunnelsQuery, team: QueryTeam, now: Date): FunnelsPlan {
  const timeZone = team.timeZone;
  const f = query.funnelsFilter ?? {};
  const steps = query.series.length;
  const viz = f.funnelVizType ?? 'steps';
  const interval = query.interval ?? 'day';
  const range = resolveRange(query.dateRange, interval, timeZone, now);
  const windowCount = f.funnelWindowInterval ?? 14;
  const unit = f.funnelWindowIntervalUnit ?? 'day';
  const windowEnd =
    unit === 'month'
      ? (start: number) => {
          const d = new Date(start);
          d.setUTCMonth(d.getUTCMonth() + windowCount);
          return d.getTime();
        }
      : (start: number) => start + windowCount * UNIT_MS[unit];
  const exclusions = (f.exclusions ?? []).map((x, i) => {
    if (x.funnelFromStep >= x.funnelToStep || x.funnelToStep >= steps)
      throw new ValidationError(
        `query.funnelsFilter.exclusions.${i}: funnelFromStep must be before funnelToStep, and both among the ${steps} steps.`,
        `query.funnelsFilter.exclusions.${i}`,
      );
    return { fromStep: x.funnelFromStep, toStep: x.funnelToStep };
  });
  if (f.funnelToStep !== undefined && (f.funnelToStep >= steps || f.funnelToStep <= (f.funnelFromStep ?? 0)))
    throw new ValidationError(
      `query.funnelsFilter.funnelToStep must be after funnelFromStep and among the ${steps} steps.`,
      'query.funnelsFilter.funnelToStep',
    );
  const b = query.breakdownFilter;
  const breakdown =
    b?.breakdown !== undefined && b.breakdown !== null && b.breakdown !== ''
      ? {
          key: b.breakdown,
          type: b.breakdown_type ?? 'event',
          limit: b.breakdown_limit ?? DEFAULT_BREAKDOWN_LIMIT,
        }
      : undefined;
  // The answer's size: steps (or buckets for trends) of each breakdown value with other.
  const values = breakdown ? breakdown.limit + 1 : 1;
  const points = values * (viz === 'trends' ? range.buckets.length : steps);
  if (points > 50_000)
    throw new ValidationError(
      `The answer would hold up to ${points} numbers; at most 50,000. Narrow breakdownFilter.breakdown_limit${viz === 'trends' ? ', the interval or the date range' : ''}.`,
      breakdown ? 'query.breakdownFilter.breakdown_limit' : 'query.interval',
    );
  const stepFilters = query.series.map((s, i) => nodeFilters(s.properties, `query.series.${i}.properties`));
  const exclusionFilters = (f.exclusions ?? []).map((x, i) =>
    nodeFilters(x.properties, `query.funnelsFilter.exclusions.${i}.properties`),
  );
  const queryFilters = combine(
    nodeFilters(query.properties, 'query.properties'),
    query.filterTestAccounts ? nodeFilters(team.testAccountFilters, 'test_account_filters') : undefined,
  );
  return {
    query,
    range,
    interval,
    order: f.funnelOrderType ?? 'ordered',
    windowEnd,
    exclusions,
    stepFilters,
    exclusionFilters,
    queryFilters,
    breakdown: breakdown as FunnelsPlan['breakdown'],
    groups: [queryFilters, ...stepFilters, ...exclusionFilters],
  };
}

interface StepTally {
  counts: number[];
  /** Seconds from the step before, per step (index 0 unused). */
  times: number[][];
}

const emptyTally = (steps: number): StepTally => ({
  counts: new Array<number>(steps).fill(0),
  times: Array.from({ length: steps }, () => []),
});

function median(values: number[]): number | null {
  if (values.length === 0) return null;
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

const mean = (values: number[]) =>
  values.length === 0 ? null : values.reduce((a, b) => a + b, 0) / values.length;

export const funnelsKind: QueryKind<FunnelsQuery, FunnelsPlan> = {
  kind: 'FunnelsQuery',
  schema: funnelsQuerySchema,
  plan: (query, team, now) => planFunnels(query, team, now),
  async execute(db, team, plan, now) {
    const { query, range } = plan;
    const steps = query.series.length;
    const params: unknown[] = [team.id, team.timeZone, localText(range.from), localText(range.to)];
    const bind = (value: unknown) => `$${params.push(value)}`;
    const sources = { event: 'e.properties', person: PERSON_PROPERTIES };
    const condition = (node: FunnelNode, group: PropertyGroup | undefined) => {
      const parts: string[] = [];
      if (node.event !== undefined && node.event !== null) parts.push(`e.event = ${bind(node.event)}`);
      if (group) parts.push(propertyFilterSql(group, sources, bind, now));
      return parts.length > 0 ? `(${parts.join(' AND ')})` : 'TRUE';
    };
    const stepConds = query.series.map((s, i) => condition(s, plan.stepFilters[i]));
    const exclConds = (query.funnelsFilter?.exclusions ?? []).map((x, i) =>
      condition(x, plan.exclusionFilters[i]),
    );
    const mask = (conds: string[]) =>
      conds.length === 0
        ? '0'
        : conds.map((c, k) => `(CASE WHEN ${c} THEN ${2 ** k} ELSE 0 END)`).join(' + ');
    const where = [
      'e.team_id = $1',
      'e.timestamp >= ($3::timestamp AT TIME ZONE $2)',
      "e.timestamp < (($4::timestamp + interval '1 second') AT TIME ZONE $2)",
    ];
    if (plan.queryFilters) where.push(propertyFilterSql(plan.queryFilters, sources, bind, now));
    // Strict order needs every event between two steps; otherwise only the ones that matter.
    if (plan.order !== 'strict') where.push(`(${[...stepConds, ...exclConds].join(' OR ')})`);
    const breakdownExpr = plan.breakdown
      ? `(${plan.breakdown.type === 'person' ? sources.person : 'e.properties'} ->> ${bind(plan.breakdown.key)})`
      : 'NULL::text';
    // persons itself only where a filter (of a step, an exclusion or the query) or the breakdown
    // reads person properties.
    const readsPersons = plan.breakdown?.type === 'person' || filtersReadPersons(plan.groups);
    const sql = `SELECT array_agg(t ORDER BY ts, id) AS t, array_agg(s ORDER BY ts, id) AS s,
        array_agg(x ORDER BY ts, id) AS x, array_agg(bv ORDER BY ts, id) AS bv
      FROM (SELECT ${PERSON_KEY} AS pk, e.timestamp AS ts, e.uuid AS id,
                   (extract(epoch FROM e.timestamp) * 1000)::float8 AS t,
                   (${mask(stepConds)})::int AS s, (${mask(exclConds)})::int AS x, ${breakdownExpr} AS bv
              FROM events e ${personJoins({ identity: true, properties: readsPersons })}
             WHERE ${where.join(' AND ')}) ev
      GROUP BY pk`;
    const { rows } = await db.query<{ t: number[]; s: number[]; x: number[]; bv: Array<string | null> }>(
      sql,
      params,
    );

    const viz = query.funnelsFilter?.funnelVizType ?? 'steps';
    const valueOf = (bv: string | null | undefined) =>
      bv === null || bv === undefined ? BREAKDOWN_NULL : bv;
    const eventsOf = (r: (typeof rows)[number]): PersonEvent[] =>
      r.t.map((t, i) => ({ t, steps: r.s[i]!, exclusions: r.x[i]!, breakdown: r.bv[i] }));

    if (viz === 'trends') return funnelTrends(plan, team.timeZone, rows.map(eventsOf), valueOf);

    const tallies = new Map<string, StepTally>();
    for (const r of rows) {
      const attempt = bestAttempt(eventsOf(r), steps, plan.order, plan.windowEnd, plan.exclusions);
      if (!attempt) continue;
      const value = plan.breakdown ? valueOf(attempt.breakdown) : '';
      let tally = tallies.get(value);
      if (!tally) tallies.set(value, (tally = emptyTally(steps)));
      for (let k = 0; k < attempt.reached; k++) {
        tally.counts[k]!++;
        if (k > 0) tally.times[k]!.push((attempt.times[k]! - attempt.times[k - 1]!) / 1000);
      }
    }
    const stepsOf = (tally: StepTally, value?: string) =>
      query.series.map((node, order) => {
        const unordered = plan.order === 'unordered';
        const step: Record<string, unknown> = {
          action_id: unordered ? null : (node.event ?? null),
          name: unordered
            ? `Completed ${order + 1} step${order === 0 ? '' : 's'}`
            : (node.event ?? 'All events'),
          custom_name: unordered ? null : (node.custom_name ?? null),
          order,
          people: [],
          count: tally.counts[order],
          type: 'events',
          average_conversion_time: order === 0 ? null : mean(tally.times[order]!),
          median_conversion_time: order === 0 ? null : median(tally.times[order]!),
        };
        if (value !== undefined) {
          step.breakdown = [value];
          step.breakdown_value = [value];
        }
        return step;
      });
    if (!plan.breakdown)
      return {
        results: stepsOf(tallies.get('') ?? emptyTally(steps)),
        hasMore: false,
        timezone: team.timeZone,
        resolved_date_range: {
          date_from: isoIn(range.from, team.timeZone),
          date_to: isoIn(range.to, team.timeZone),
        },
      };
    // The values with the most persons at the first step, then the rest together as other.
    const ranked = [...tallies.entries()].sort(
      (a, b) => b[1].counts[0]! - a[1].counts[0]! || a[0].localeCompare(b[0]),
    );
    const top = ranked.slice(0, plan.breakdown.limit);
    const rest = ranked.slice(plan.breakdown.limit);
    const results = top.map(([value, tally]) => stepsOf(tally, value));
    if (rest.length > 0) {
      const other = emptyTally(steps);
      for (const [, t] of rest)
        for (let k = 0; k < steps; k++) {
          other.counts[k]! += t.counts[k]!;
          other.times[k]!.push(...t.times[k]!);
        }
      results.push(stepsOf(other, BREAKDOWN_OTHER));
    }
    return {
      results,
      hasMore: rest.length > 0,
      timezone: team.timeZone,
      resolved_date_range: {
        date_from: isoIn(range.from, team.timeZone),
        date_to: isoIn(range.to, team.timeZone),
      },
    };
  },
};

/** funnelVizType trends: per interval of the first step, the share of persons who entered then
 * (reached funnelFromStep) and converted (reached funnelToStep, by default the last). */
function funnelTrends(
  plan: FunnelsPlan,
  timeZone: string,
  persons: PersonEvent[][],
  valueOf: (bv: string | null | undefined) => string,
): Record<string, unknown> {
  const { query, range, interval } = plan;
  const steps = query.series.length;
  const from = query.funnelsFilter?.funnelFromStep ?? 0;
  const to = query.funnelsFilter?.funnelToStep ?? steps - 1;
  const index = new Map(range.buckets.map((b, i) => [localText(b), i]));
  const bucketOf = (t: number) => index.get(localText(bucketStart(localOf(new Date(t), timeZone), interval)));
  const series = new Map<string, { entered: number[]; converted: number[] }>();
  for (const events of persons) {
    const starts = new Set<number>();
    for (const e of events) if (e.steps & 1) starts.add(bucketOf(e.t) ?? -1);
    for (const b of starts) {
      if (b < 0) continue;
      const attempt = bestAttempt(
        events,
        steps,
        plan.order,
        plan.windowEnd,
        plan.exclusions,
        (t) => bucketOf(t) === b,
      );
      if (!attempt || attempt.reached <= from) continue;
      const value = plan.breakdown ? valueOf(attempt.breakdown) : '';
      let s = series.get(value);
      if (!s)
        series.set(
          value,
          (s = {
            entered: new Array<number>(range.buckets.length).fill(0),
            converted: new Array<number>(range.buckets.length).fill(0),
          }),
        );
      s.entered[b]!++;
      if (attempt.reached > to) s.converted[b]!++;
    }
  }
  const days = range.buckets.map((b) => dayText(b, interval));
  const labels = range.buckets.map((b) => label(b, interval));
  const ranked = [...series.entries()]
    .sort((a, b) => b[1].entered.reduce((x, y) => x + y, 0) - a[1].entered.reduce((x, y) => x + y, 0))
    .slice(0, plan.breakdown?.limit ?? 1);
  if (ranked.length === 0) ranked.push(['', { entered: days.map(() => 0), converted: days.map(() => 0) }]);
  return {
    results: ranked.map(([value, s]) => ({
      count: days.length,
      data: s.entered.map((n, i) => (n === 0 ? 0 : Math.round((s.converted[i]! / n) * 10_000) / 100)),
      days,
      labels,
      ...(plan.breakdown ? { breakdown_value: [value] } : {}),
    })),
    hasMore: plan.breakdown ? series.size > plan.breakdown.limit : false,
    timezone: timeZone,
    resolved_date_range: { date_from: isoIn(range.from, timeZone), date_to: isoIn(range.to, timeZone) },
  };
}
