// Pure checks of cohort filters and of the references between cohorts and flags:
// - checkCohortFilters walks the client's AND/OR tree iteratively (depth and leaf count bounded),
//   checks every leaf, normalises cohort ids to integers and reports what the tree refers to;
// - cohortCycle / flagCycle find a reference loop among a project's definitions;
// - behaviouralDependency finds a cohort with event criteria that a flag would depend on.
// Every problem is a 400 with attr `filters`.
import { ValidationError } from '@sett/http';
import { describeAjvError, type ValidateFunction } from '@sett/schemas';
import { describeRegexProblem, filterValueProblem } from '../filter-values';
import { MAX_INT4 } from '../validate';
import { validateBehavioralLeaf, validateCohortLeaf, validatePersonLeaf } from './cohort-schemas';

/** Most conditions (leaves) one cohort may hold. */
export const MAX_COHORT_LEAVES = 1000;
/** Deepest nesting of AND/OR groups (the request body is bounded by MAX_JSON_DEPTH anyway). */
export const MAX_COHORT_GROUP_DEPTH = 20;

export interface CohortFilterSummary {
  /** Cohorts the filters refer to (type "cohort"). */
  cohortIds: Set<number>;
  /** Whether any leaf is behavioural (event based). */
  behavioral: boolean;
  leaves: number;
}

type Json = Record<string, unknown>;

const fail = (detail: string): never => {
  throw new ValidationError(detail, 'filters', 'invalid_input');
};

function checkLeaf(validate: ValidateFunction<unknown>, leaf: unknown, path: string): void {
  if (validate(leaf)) return;
  const { detail } = describeAjvError(validate.errors);
  fail(`Filters are not valid (${path}: ${detail})`);
}

/** The empty tree PostHog shows for a cohort without criteria (static cohorts). */
export const emptyCohortFilters = () => ({ properties: { type: 'AND', values: [] as unknown[] } });

/** True when the filters hold at least one condition. */
export function hasCriteria(filters: unknown): boolean {
  const root = (filters as Json | null | undefined)?.properties as Json | undefined;
  return Array.isArray(root?.values) && root.values.length > 0;
}

/**
 * Checks the tree `filters.properties` in place (cohort ids written as strings become integers,
 * as PostHog stores them) and summarises it. `filters` has passed cohortFiltersSchema.
 */
export function checkCohortFilters(filters: Json): CohortFilterSummary {
  const summary: CohortFilterSummary = { cohortIds: new Set(), behavioral: false, leaves: 0 };
  const root = filters.properties;
  if (root === undefined) return summary;
  const stack: Array<[unknown, string, number]> = [[root, 'properties', 1]];
  while (stack.length > 0) {
    const [node, path, depth] = stack.pop()!;
    if (typeof node !== 'object' || node === null || Array.isArray(node))
      fail(`Filters are not valid (${path} must be an object)`);
    const n = node as Json;
    if (n.type === 'AND' || n.type === 'OR') {
      if (depth > MAX_COHORT_GROUP_DEPTH)
        fail(`Filters are not valid (groups nest deeper than ${MAX_COHORT_GROUP_DEPTH} levels)`);
      if (!Array.isArray(n.values)) fail(`Filters are not valid (${path}.values must be an array)`);
      (n.values as unknown[]).forEach((child, i) => stack.push([child, `${path}.values[${i}]`, depth + 1]));
      continue;
    }
    if (++summary.leaves > MAX_COHORT_LEAVES)
      fail(`Filters are not valid (more than ${MAX_COHORT_LEAVES} conditions)`);
    switch (n.type) {
      case 'person': {
        checkLeaf(validatePersonLeaf, n, path);
        const operator = n.operator as string;
        if ((n.value === undefined || n.value === null) && operator !== 'is_set' && operator !== 'is_not_set')
          fail(`Missing required keys for person filter: value (${path})`);
        if ((operator === 'regex' || operator === 'not_regex') && n.value !== undefined && n.value !== null) {
          const problem = describeRegexProblem(n.value);
          if (problem) fail(`Filters are not valid (${path}: ${problem})`);
        }
        const tooLong = filterValueProblem(n.value);
        if (tooLong) fail(`Filters are not valid (${path}: ${tooLong})`);
        break;
      }
      case 'cohort': {
        checkLeaf(validateCohortLeaf, n, path);
        const id = Number(n.value);
        if (id > MAX_INT4) fail(`Invalid Cohort ID in filter (${path})`);
        n.value = id;
        summary.cohortIds.add(id);
        break;
      }
      case 'behavioral':
        checkLeaf(validateBehavioralLeaf, n, path);
        summary.behavioral = true;
        break;
      default:
        fail(`Filters are not valid (${path}.type must be "AND", "OR", "person", "cohort" or "behavioral")`);
    }
  }
  return summary;
}

/** Cohort ids and behavioural criteria of stored filters (already checked when saved). */
export function summariseStored(filters: unknown): { cohortIds: number[]; behavioral: boolean } {
  const cohortIds: number[] = [];
  let behavioral = false;
  const root = (filters as Json | null | undefined)?.properties;
  const stack: unknown[] = root === undefined ? [] : [root];
  while (stack.length > 0) {
    const n = stack.pop() as Json | null;
    if (!n || typeof n !== 'object') continue;
    if (Array.isArray(n.values) && (n.type === 'AND' || n.type === 'OR')) stack.push(...n.values);
    else if (n.type === 'cohort' && Number.isInteger(Number(n.value))) cohortIds.push(Number(n.value));
    else if (n.type === 'behavioral') behavioral = true;
  }
  return { cohortIds, behavioral };
}

/** True when following references from `start` leads back to `start`. */
export function hasCycle<K>(start: K, refsOf: (node: K) => Iterable<K>): boolean {
  const seen = new Set<K>();
  const stack: K[] = [...refsOf(start)];
  while (stack.length > 0) {
    const node = stack.pop()!;
    if (node === start) return true;
    if (seen.has(node)) continue;
    seen.add(node);
    stack.push(...refsOf(node));
  }
  return false;
}

export interface CohortDefinitionRow {
  id: number;
  name: string;
  isStatic: boolean;
  filters: unknown;
}

/**
 * The first cohort, among `ids` and the cohorts they refer to, whose criteria are behavioural.
 * Static cohorts stop the walk: their membership is a stored list, criteria are never evaluated.
 */
export function behaviouralDependency(
  ids: Iterable<number>,
  cohorts: ReadonlyMap<number, CohortDefinitionRow>,
  overrides: ReadonlyMap<number, unknown> = new Map(),
): CohortDefinitionRow | undefined {
  const seen = new Set<number>();
  const stack = [...ids];
  while (stack.length > 0) {
    const id = stack.pop()!;
    if (seen.has(id)) continue;
    seen.add(id);
    const cohort = cohorts.get(id);
    if (!cohort || cohort.isStatic) continue;
    const summary = summariseStored(overrides.has(id) ? overrides.get(id) : cohort.filters);
    if (summary.behavioral) return cohort;
    stack.push(...summary.cohortIds);
  }
  return undefined;
}

/** Every cohort `ids` depend on, themselves included (the walk stops at static cohorts). */
export function cohortClosure(
  ids: Iterable<number>,
  cohorts: ReadonlyMap<number, CohortDefinitionRow>,
): Set<number> {
  const out = new Set<number>();
  const stack = [...ids];
  while (stack.length > 0) {
    const id = stack.pop()!;
    if (out.has(id)) continue;
    out.add(id);
    const cohort = cohorts.get(id);
    if (cohort && !cohort.isStatic) stack.push(...summariseStored(cohort.filters).cohortIds);
  }
  return out;
}

interface FlagProperty {
  key?: unknown;
  type?: unknown;
  value?: unknown;
}

/** Cohort and flag references in a flag's condition groups (groups and super_groups). */
export function flagReferences(filters: {
  groups?: Array<{ properties?: FlagProperty[] }>;
  super_groups?: Array<{ properties?: FlagProperty[] }>;
}): { cohorts: Array<{ id: number; raw: unknown }>; flags: Array<{ key: string; value: unknown }> } {
  const cohorts: Array<{ id: number; raw: unknown }> = [];
  const flags: Array<{ key: string; value: unknown }> = [];
  for (const group of [...(filters.groups ?? []), ...(filters.super_groups ?? [])]) {
    for (const p of group.properties ?? []) {
      if (p.type === 'cohort') {
        const v = p.value;
        const id =
          typeof v === 'number' ? v : typeof v === 'string' && /^[1-9][0-9]{0,9}$/.test(v) ? Number(v) : NaN;
        cohorts.push({ id: Number.isInteger(id) && id >= 1 && id <= MAX_INT4 ? id : NaN, raw: v });
      } else if (p.type === 'flag') {
        flags.push({ key: String(p.key), value: p.value });
      }
    }
  }
  return { cohorts, flags };
}
