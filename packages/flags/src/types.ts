// Shapes of stored flag definitions, of the per-request evaluation context and of one flag's
// result. Field names follow PostHog's FeatureFlag model and its /flags v2 (decide v4) response.

export interface PropertyFilter {
  key: string;
  value?: unknown;
  operator?: string;
  type?: 'person' | 'group' | 'cohort' | 'flag' | string;
  group_type_index?: number;
  /** Inside cohort definitions: the leaf's result is inverted. */
  negation?: boolean;
  /** Local evaluation only: flag keys in evaluation order, for `type: "flag"` filters. */
  dependency_chain?: string[];
}

/** A cohort's property tree, PostHog's `cohort.properties`: nested AND/OR groups. */
export interface CohortPropertyGroup {
  type?: 'AND' | 'OR' | string;
  values?: Array<CohortPropertyGroup | PropertyFilter>;
}

/** A project's cohort as flags evaluate it (the Redis cohort list entry). */
export interface CohortDefinition {
  id: number;
  name?: string;
  /** `filters.properties` holds the property tree; static cohorts have none. */
  filters: { properties?: CohortPropertyGroup } | null;
  is_static: boolean;
  version?: number;
}

export interface FlagConditionGroup {
  properties?: PropertyFilter[];
  rollout_percentage?: number | null;
  variant?: string | null;
}

export interface FlagVariant {
  key: string;
  name?: string;
  rollout_percentage: number;
}

export interface FlagFilters {
  groups?: FlagConditionGroup[];
  multivariate?: { variants: FlagVariant[] } | null;
  aggregation_group_type_index?: number | null;
  payloads?: Record<string, unknown>;
  /** Early access enrollment, legacy form: the first group's properties gate the flag. */
  super_groups?: FlagConditionGroup[];
  /** Early access enrollment, current PostHog form: gate on `$feature_enrollment/<flag key>`. */
  feature_enrollment?: boolean;
}

export interface FlagDefinition {
  id: number;
  team_id: number;
  key: string;
  name: string;
  filters: FlagFilters;
  active: boolean;
  deleted: boolean;
  ensure_experience_continuity: boolean;
  version: number;
  has_encrypted_payloads?: boolean;
}

export interface EvaluationContext {
  distinctId: string;
  personProperties: Record<string, unknown>;
  /** group type name -> group key */
  groups: Record<string, string>;
  /** group type name -> that group's properties */
  groupProperties: Record<string, Record<string, unknown>>;
  /** group type index -> group type name */
  groupTypeMapping: Record<number, string>;
  /** flag key -> stored hash key (experience continuity) */
  hashKeyOverrides?: Record<string, string>;
  /** Anchor for relative dates (`-7d`); defaults to the current time. */
  now?: Date;
  /** The project's non-deleted cohorts by id; a flag naming one not here cannot be computed. */
  cohorts?: ReadonlyMap<number, CohortDefinition>;
  /**
   * Ids of the static cohorts the person belongs to. Undefined when they were not looked up:
   * a flag that needs one then cannot be computed.
   */
  staticCohorts?: ReadonlySet<number>;
  /**
   * Every non-deleted flag of the project (inactive ones too), by which `type: "flag"` filters
   * resolve their dependency; defaults to the flags being evaluated.
   */
  dependencyFlags?: readonly FlagDefinition[];
}

export type FlagReasonCode =
  | 'super_condition_value'
  | 'condition_match'
  | 'no_group_type'
  | 'out_of_rollout_bound'
  | 'no_condition_match';

export interface FlagReason {
  code: FlagReasonCode;
  condition_index: number | null;
  description: string;
}

export interface FlagResult {
  key: string;
  enabled: boolean;
  /** Only for a multivariate flag that matched with a variant; PostHog sends `null` otherwise. */
  variant?: string;
  reason: FlagReason;
  metadata: { id: number; version: number; payload?: string; description?: string };
}

export interface EvaluateFlagsResult {
  flags: Record<string, FlagResult>;
  errorsWhileComputingFlags: boolean;
}
