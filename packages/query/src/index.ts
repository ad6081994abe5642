// @sett/query: the dashboard query engine (QueryEngine), its Postgres implementation and the
// query kinds, with the property filters and date ranges they share with management's lists.
export { createQueryEngine } from './engine';
export type {
  EngineDeps,
  PlanBase,
  PreparedQuery,
  QueryAnswer,
  QueryEngine,
  QueryKind,
  QueryTeam,
  RunOptions,
} from './engine';
export { createStatementRunner } from './statements';
export type { Statements, StatementRunner } from './statements';
export {
  checkFilterRegexes,
  filterRegexes,
  parsePropertyFilters,
  propertyFilterSql,
  readPropertyFilters,
} from './property-filters';
export type { PropertyGroup, PropertyLeaf, PropertyOperator, PropertySource } from './property-filters';
export { MAX_BUCKETS, TRENDS_INTERVALS } from './time-range';
export { BREAKDOWN_COUNTED_PROPERTIES, MAX_ANSWER_POINTS, trendsKind } from './kinds/trends';
export { eventsKind } from './kinds/events';
export { hogqlKind } from './kinds/hogql';
export { createHogQLParser, sharedHogQLParser, MAX_HOGQL_LENGTH } from './hogql/parse';
export type { HogQLParser } from './hogql/parse';
export { HOGQL_FUNCTIONS } from './hogql/compile';
export { funnelsKind } from './kinds/funnels';
export { retentionKind } from './kinds/retention';
export { bestAttempt } from './kinds/funnel-steps';
export type { Attempt, Exclusion, FunnelOrder, PersonEvent } from './kinds/funnel-steps';
export { ALL_KINDS } from './kinds';
