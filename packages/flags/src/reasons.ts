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

// A handful of distinct reasons exist per flag list: each is built once and shared (frozen),
// looked up by code and condition index without building a key.
const MAX_CACHED_INDEX = 1000;
const byCode = new Map<FlagReasonCode, { none?: FlagReason; byIndex: FlagReason[] }>();

export function reason(code: FlagReasonCode, conditionIndex: number | null): FlagReason {
  let cached = byCode.get(code);
  if (!cached) byCode.set(code, (cached = { byIndex: [] }));
  const cacheable =
    conditionIndex === null ||
    (Number.isInteger(conditionIndex) && conditionIndex >= 0 && conditionIndex < MAX_CACHED_INDEX);
  let hit = conditionIndex === null ? cached.none : cacheable ? cached.byIndex[conditionIndex] : undefined;
  if (!hit) {
    hit = Object.freeze({
      code,
      condition_index: conditionIndex,
      description: describe(code, conditionIndex),
    });
    if (conditionIndex === null) cached.none = hit;
    else if (cacheable) cached.byIndex[conditionIndex] = hit;
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
