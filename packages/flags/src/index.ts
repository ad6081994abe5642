// @sett/flags: PostHog-compatible feature flag evaluation, pure and synchronous.
export { evaluateFlag, evaluateFlags, enrollmentPropertyKey, resolveDependency } from './evaluate';
export { requiredPersonProperties, requiredGroupProperties, conditionFilters } from './required-properties';
export { cohortClosure, cohortIdOf, cohortProperties } from './cohorts';
export { flagHash } from './hash';
export { matchingVariant, variantForHash, variantLookupTable } from './variants';
export type { VariantRange } from './variants';
export {
  MAX_REGEX_LENGTH,
  MAX_REGEX_PROGRAM,
  PROPERTY_OPERATORS,
  matchProperty,
  regexProblem,
} from './property-match';
export { REQUEST_REGEX_BUDGET, createRegexChecker } from './regex-checker';
export type { RegexChecker } from './regex-checker';
export { estimateRegexProgram } from './regex-cost';
export {
  cohortTreeRegexPatterns,
  compileRegexesInTurns,
  flagRegexPatterns,
  projectRegexPatterns,
} from './regex-warmup';
export type { CompiledRegex } from './property-match';
export { parseRelativeDate } from './dates';
export { FlagEvaluationError } from './errors';
export type {
  CohortDefinition,
  CohortPropertyGroup,
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
