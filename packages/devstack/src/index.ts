// The development stack: helpers that start local infrastructure for dev runs and tests.
export * from './dev-broker';
export * from './edge';
export { EDGE_ROUTING } from './edge-routes';
export { consoleIsStale, ensureConsoleBuilt } from './console-build';
