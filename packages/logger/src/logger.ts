// winston logger shared by every service: JSON lines in production, readable lines in
// development, child loggers carrying context, and secrets redacted from every record.
import winston from 'winston';
import { redact, redactString } from './redact';
import { currentRequestId } from './request-context';

export type LogLevel = 'error' | 'warn' | 'info' | 'debug';
export type LogFormat = 'json' | 'pretty';

export interface Logger {
  error(message: string, meta?: Record<string, unknown>): void;
  warn(message: string, meta?: Record<string, unknown>): void;
  info(message: string, meta?: Record<string, unknown>): void;
  debug(message: string, meta?: Record<string, unknown>): void;
  child(context: Record<string, unknown>): Logger;
  isDebugEnabled(): boolean;
}

export interface LoggerOptions {
  level?: LogLevel;
  format?: LogFormat;
  service?: string;
  /** Where lines go; defaults to stdout. Tests pass their own stream. */
  stream?: NodeJS.WritableStream;
}

const SPLAT = Symbol.for('splat');

const redactFormat = winston.format((info) => {
  const clean = redact({ ...info }) as Record<string | symbol, unknown>;
  for (const key of Object.keys(info)) delete (info as Record<string, unknown>)[key];
  Object.assign(info, clean);
  info.message = typeof info.message === 'string' ? redactString(info.message) : info.message;
  delete (info as Record<symbol, unknown>)[SPLAT];
  return info;
});

// Lines written while a request is served name it (request-context.ts); an explicit
// request_id in the line's own fields wins.
const requestIdFormat = winston.format((info) => {
  if (info.request_id === undefined) {
    const id = currentRequestId();
    if (id !== undefined) info.request_id = id;
  }
  return info;
});

function pretty() {
  return winston.format.printf((info) => {
    const { level, message, timestamp, service, ...rest } = info as Record<string, unknown>;
    const ctx = Object.keys(rest).length ? ` ${JSON.stringify(rest)}` : '';
    return `${timestamp as string} ${String(level).padEnd(5)} [${(service as string) ?? 'sett'}] ${message as string}${ctx}`;
  });
}

function wrap(w: winston.Logger): Logger {
  return {
    error: (m, meta) => w.error(m, meta),
    warn: (m, meta) => w.warn(m, meta),
    info: (m, meta) => w.info(m, meta),
    debug: (m, meta) => w.debug(m, meta),
    child: (context) => wrap(w.child(context)),
    isDebugEnabled: () => w.isDebugEnabled(),
  };
}

export function createLogger(options: LoggerOptions = {}): Logger {
  const format = options.format ?? 'json';
  const transport = options.stream
    ? new winston.transports.Stream({ stream: options.stream })
    : new winston.transports.Console({ stderrLevels: [] });
  const w = winston.createLogger({
    level: options.level ?? 'info',
    defaultMeta: options.service ? { service: options.service } : undefined,
    format: winston.format.combine(
      winston.format.errors({ stack: true }),
      // Before redaction: a client-chosen id is redacted like any other value.
      requestIdFormat(),
      redactFormat(),
      winston.format.timestamp(),
      format === 'json' ? winston.format.json() : pretty(),
    ),
    transports: [transport],
  });
  return wrap(w);
}

/** A logger that drops everything; for unit tests of code that requires one. */
export function createSilentLogger(): Logger {
  const noop = () => undefined;
  const l: Logger = {
    error: noop,
    warn: noop,
    info: noop,
    debug: noop,
    child: () => l,
    isDebugEnabled: () => false,
  };
  return l;
}
