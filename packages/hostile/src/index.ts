// @sett/hostile: a corpus of hostile requests for capture, decide and management, the
// generators behind it, a raw HTTP sender with the suite's verdict, and a spawner for the real
// service processes. Used by this package's tests; nothing in production imports it.
export { buildCorpus, CASE_CLASSES } from './corpus';
export type { CaseClass, CorpusContext, HostileCase, Service } from './corpus';
export { buildAccountsCorpus } from './accounts-corpus';
export type { AccountsContext } from './accounts-corpus';
export { buildHogqlCorpus } from './hogql-corpus';
export * from './generators';
export { lz64RunBase64 } from './lz64-bomb';
export { sendCase, verdict, runPool } from './send';
export type { Outcome } from './send';
export { countTable } from './report';
export { buildScenarios } from './scenarios';
export { send } from './scenario-kit';
export type { Scenario, ScenarioContext } from './scenarios';
export { SERVICES, getStatus, startProcesses, stopProcess, waitUntil } from './stack';
export type { RunningProcess, ServiceName } from './stack';
