// Reason codes, their priority and their descriptions, worded as PostHog's /flags service
// words them (rust/feature-flags api/types.rs get_reason_description).
import type { FlagReason, FlagReasonCode } from './types';

// When no condition matches, the most informative non-match wins: a condition whose
// properties matched but whose rollout excluded the person beats one that did not match.
const PRIORITY: Record<FlagReasonCode, number> = {
  super_condition_value: 4,
  condition_match: 3,
  out_of_rollout_bound: 2,
  no_condition_match: 1,
  no_group_type: 0,
};

export function outranks(candidate: FlagReasonCode, current: FlagReasonCode): boolean {
  // `>=`: on a tie the later condition replaces the earlier one, as in PostHog.
  return PRIORITY[candidate] >= PRIORITY[current];
}

// A handful of distinct reasons exist per flag list: each is built once and shared (frozen).
const REASON_CACHE_MAX = 10_000;
const reasons = new Map<string, FlagReason>();

export function reason(code: FlagReasonCode, conditionIndex: number | null): FlagReason {
  const cacheKey = `${code}:${conditionIndex}`;
  let hit = reasons.get(cacheKey);
  if (!hit) {
    hit = Object.freeze({
      code,
      condition_index: conditionIndex,
      description: describe(code, conditionIndex),
    });
    if (reasons.size >= REASON_CACHE_MAX) reasons.clear();
    reasons.set(cacheKey, hit);
  }
  return hit;
}

function describe(code: FlagReasonCode, conditionIndex: number | null): string {
  switch (code) {
    case 'condition_match':
      return `Matched condition set ${(conditionIndex ?? 0) + 1}`;
    case 'no_condition_match':
      return 'No matching condition set';
    case 'out_of_rollout_bound':
      return 'Out of rollout bound';
    case 'no_group_type':
      return 'No group type';
    case 'super_condition_value':
      return 'Super condition value';
  }
}
