// The body of GET /flags/definitions and /api/feature_flag/local_evaluation/ (PostHog's shape:
// flags, group_type_mapping, cohorts), serialised once per flag list and reused. The flag store
// hands out the same ProjectFlags object for as long as the stored list is unchanged, so the
// body and its ETag are keyed on that object: thousands of pollers cost one JSON.stringify and
// one hash per list version, not one per request (the cohort list is part of that object, so
// a cohort change is a new body and a new ETag). Pure apart from that memo.
//
// As PostHog sends them: with `send_cohorts`, `cohorts` holds every property-based cohort a flag
// names (cohorts they name in turn included); static cohorts are left out, so the SDK raises
// RequiresServerEvaluation for the flags that use one and asks /flags for those flags only.
// Flag-dependency filters carry the dependency's key (PostHog stores its id) and
// `dependency_chain`: the keys to evaluate first, in order, ending with the dependency; `[]` for
// a cycle, and the unresolved reference for a missing dependency, so the SDK falls back too.
import { createHash } from 'node:crypto';
import {
  cohortClosure,
  cohortIdOf,
  cohortProperties,
  conditionFilters,
  resolveDependency,
  type FlagDefinition,
  type PropertyFilter,
} from '@sett/flags';
import type { ProjectFlags } from '../flags/flag-definitions';

/** A property-based cohort as PostHog sends it for local evaluation (id -> definition). */
export type CohortDefinitions = Record<string, { type: 'OR' | 'AND'; values: unknown[] }>;

export interface LocalEvaluationBody {
  /** The serialised JSON. */
  bytes: Buffer;
  /** Strong validator of `bytes`, quoted. */
  etag: string;
}

/** One flag in MinimalFeatureFlagSerializer's field order. */
function flagJson(f: FlagDefinition) {
  return {
    id: f.id,
    team_id: f.team_id,
    name: f.name,
    key: f.key,
    filters: f.filters,
    deleted: f.deleted,
    active: f.active,
    ensure_experience_continuity: f.ensure_experience_continuity,
    has_encrypted_payloads: f.has_encrypted_payloads === true,
    version: f.version,
    // Sett has no per-runtime flags or evaluation tags yet: PostHog's defaults.
    evaluation_runtime: 'all',
    evaluation_tags: [] as string[],
  };
}

/** The property-based cohorts the project's flags name, transitively, in PostHog's shape. */
export function usedCohorts(project: ProjectFlags): CohortDefinitions {
  const ids: number[] = [];
  for (const flag of project.definitions) {
    try {
      for (const filter of conditionFilters(flag)) {
        const id = filter?.type === 'cohort' ? cohortIdOf(filter) : undefined;
        if (id !== undefined) ids.push(id);
      }
    } catch {
      // malformed filters: nothing to send for this flag
    }
  }
  const out: CohortDefinitions = {};
  for (const id of [...cohortClosure(ids, project.cohorts).ids].sort((a, b) => a - b)) {
    const cohort = project.cohorts.get(id);
    if (!cohort || cohort.is_static) continue;
    const props = cohortProperties(cohort);
    const type = props?.type === 'AND' ? 'AND' : 'OR';
    out[String(id)] = { type, values: Array.isArray(props?.values) ? props.values : [] };
  }
  return out;
}

/** The flags with their dependency filters rewritten for the SDK (others unchanged). */
export function withDependencyChains(project: ProjectFlags): FlagDefinition[] {
  const byId = new Map(project.definitions.map((f) => [String(f.id), f]));
  const byKey = new Map(project.definitions.map((f) => [f.key, f]));
  const dependenciesOf = (flag: FlagDefinition): FlagDefinition[] | undefined => {
    const deps: FlagDefinition[] = [];
    for (const filter of safeFilters(flag)) {
      if (filter?.type !== 'flag') continue;
      const dep = resolveDependency(filter.key, byId, byKey);
      if (!dep) return undefined;
      deps.push(dep);
    }
    return deps;
  };
  // Keys in evaluation order ending with `start`; [] on a cycle; undefined when one is missing.
  const chains = new Map<FlagDefinition, string[] | undefined>();
  const chainOf = (start: FlagDefinition): string[] | undefined => {
    if (chains.has(start)) return chains.get(start);
    const order: string[] = [];
    const state = new Map<FlagDefinition, 'open' | 'done'>();
    let cycle = false;
    let missing = false;
    // Iterative depth-first post-order (flag definitions come from users: no recursion).
    const stack: Array<{ flag: FlagDefinition; deps?: FlagDefinition[]; next: number }> = [
      { flag: start, next: 0 },
    ];
    state.set(start, 'open');
    while (stack.length > 0 && !cycle) {
      const top = stack[stack.length - 1]!;
      if (!top.deps) {
        const deps = dependenciesOf(top.flag);
        if (!deps) missing = true;
        top.deps = deps ?? [];
      }
      if (top.next < top.deps.length) {
        const dep = top.deps[top.next++]!;
        const seen = state.get(dep);
        if (seen === 'open') cycle = true;
        else if (!seen) {
          state.set(dep, 'open');
          stack.push({ flag: dep, next: 0 });
        }
      } else {
        state.set(top.flag, 'done');
        order.push(top.flag.key);
        stack.pop();
      }
    }
    const chain = cycle ? [] : missing ? undefined : order;
    chains.set(start, chain);
    return chain;
  };
  return project.definitions.map((flag) => {
    const groups = flag.filters?.groups;
    if (!Array.isArray(groups) || !safeFilters(flag).some((f) => f?.type === 'flag')) return flag;
    const rewrite = (filter: PropertyFilter): PropertyFilter => {
      if (filter?.type !== 'flag') return filter;
      const dep = resolveDependency(filter.key, byId, byKey);
      if (!dep) return { ...filter, dependency_chain: [String(filter.key)] };
      return { ...filter, key: dep.key, dependency_chain: chainOf(dep) ?? [String(filter.key)] };
    };
    return {
      ...flag,
      filters: {
        ...flag.filters,
        groups: groups.map((g) =>
          g && Array.isArray(g.properties) ? { ...g, properties: g.properties.map(rewrite) } : g,
        ),
      },
    };
  });
}

function safeFilters(flag: FlagDefinition): PropertyFilter[] {
  try {
    return conditionFilters(flag);
  } catch {
    return [];
  }
}

export function buildLocalEvaluationBody(
  project: ProjectFlags,
  cohorts: CohortDefinitions,
): LocalEvaluationBody {
  const groupTypeMapping: Record<string, string> = {};
  for (const [index, name] of Object.entries(project.groupTypes)) groupTypeMapping[index] = name;
  const bytes = Buffer.from(
    JSON.stringify({
      flags: withDependencyChains(project).map(flagJson),
      group_type_mapping: groupTypeMapping,
      cohorts,
    }),
  );
  const etag = `"${createHash('sha256').update(bytes).digest('base64url').slice(0, 32)}"`;
  return { bytes, etag };
}

/**
 * Memo of bodies per flag list object (flags, group types and cohorts together) and cohort
 * mode. `send_cohorts` asks for cohorts as definitions; without it PostHog sends `cohorts: {}`
 * (it would inline a flag's single simple cohort into its filters; Sett does not, so such a flag
 * falls back to remote evaluation in old SDKs that do not send `send_cohorts`).
 */
export function createLocalEvaluationBodies(
  loadCohorts: (project: ProjectFlags) => CohortDefinitions = usedCohorts,
) {
  const memo = new WeakMap<
    ProjectFlags,
    { withCohorts?: LocalEvaluationBody; inlined?: LocalEvaluationBody }
  >();
  return (project: ProjectFlags, sendCohorts: boolean): LocalEvaluationBody => {
    let entry = memo.get(project);
    if (!entry) {
      entry = {};
      memo.set(project, entry);
    }
    if (sendCohorts) return (entry.withCohorts ??= buildLocalEvaluationBody(project, loadCohorts(project)));
    return (entry.inlined ??= buildLocalEvaluationBody(project, {}));
  };
}

/** RFC 9110 If-None-Match: `*`, or any listed tag equal under weak comparison. */
export function etagMatches(header: string | undefined, etag: string): boolean {
  if (header === undefined) return false;
  if (header === etag) return true;
  const bare = etag.startsWith('W/') ? etag.slice(2) : etag;
  for (const part of header.split(',')) {
    const tag = part.trim();
    if (tag === '*') return true;
    if ((tag.startsWith('W/') ? tag.slice(2) : tag) === bare) return true;
  }
  return false;
}
