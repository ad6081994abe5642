// @sett/flags: PostHog-compatible feature flag evaluation, pure and synchronous.
export { evaluateFlag, evaluateFlags, enrollmentPropertyKey } from './evaluate';
export { requiredPersonProperties, requiredGroupProperties } from './required-properties';
export { flagHash } from './hash';
export { matchingVariant, variantForHash, variantLookupTable } from './variants';
export type { VariantRange } from './variants';
export { matchProperty } from './property-match';
export { parseRelativeDate } from './dates';
export { FlagEvaluationError } from './errors';
export type {
  EvaluateFlagsResult,
  EvaluationContext,
  FlagConditionGroup,
  FlagDefinition,
  FlagFilters,
  FlagReason,
  FlagReasonCode,
  FlagResult,
  FlagVariant,
  PropertyFilter,
} from './types';
