export { createLogger, createSilentLogger } from './logger';
export type { AccessFields, Logger, LoggerOptions, LogLevel, LogFormat } from './logger';
export { redact, redactString, REDACTED } from './redact';
export { runWithRequestId, currentRequestId } from './request-context';
