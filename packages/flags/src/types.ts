// Shapes of stored flag definitions, of the per-request evaluation context and of one flag's
// result. Field names follow PostHog's FeatureFlag model and its /flags v2 (decide v4) response.

export interface PropertyFilter {
  key: string;
  value?: unknown;
  operator?: string;
  type?: 'person' | 'group' | 'cohort' | string;
  group_type_index?: number;
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
