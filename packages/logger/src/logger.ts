// winston logger shared by every service: JSON lines in production, readable lines in
// development, child loggers carrying context, and secrets redacted from every record.
import winston from 'winston';
import { createLineBuffer } from './line-buffer';
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
  /**
   * One access line (`request` at info): flat fields of numbers and strings the caller vouches
   * for (a route template, a masked key prefix), written without the general pipeline. It is
   * written on every request, so it costs what the service's own work on a small read costs
   * when it goes through winston's formats.
   */
  access(fields: AccessFields): void;
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

/** An access line's fields: undefined ones are left out. */
export type AccessFields = Record<string, string | number | null | undefined>;
type AccessWriter = (fields: AccessFields) => void;

function wrap(w: winston.Logger, access: AccessWriter): Logger {
  return {
    error: (m, meta) => w.error(m, meta),
    warn: (m, meta) => w.warn(m, meta),
    info: (m, meta) => w.info(m, meta),
    debug: (m, meta) => w.debug(m, meta),
    child: (context) => wrap(w.child(context), (fields) => access({ ...plainFields(context), ...fields })),
    isDebugEnabled: () => w.isDebugEnabled(),
    access,
  };
}

/** A child logger's context as access fields: its strings and numbers. */
function plainFields(context: Record<string, unknown>): AccessFields {
  const out: AccessFields = {};
  for (const [key, value] of Object.entries(context))
    if (typeof value === 'string' || typeof value === 'number') out[key] = value;
  return out;
}

/** The access line as the JSON format writes any line (level, message, fields, service,
 * timestamp), string values redacted as every line's are; other formats take the general way. */
function accessWriter(
  w: winston.Logger,
  format: LogFormat,
  service: string | undefined,
  stream: NodeJS.WritableStream,
): AccessWriter {
  return (fields) => {
    if (!w.isInfoEnabled()) return;
    if (format !== 'json') return void w.info('request', fields);
    const line: Record<string, string | number | null> = { level: 'info', message: 'request' };
    for (const key of Object.keys(fields)) {
      const value = fields[key];
      if (value === undefined) continue;
      line[key] = typeof value === 'string' ? redactString(value) : value;
    }
    if (service !== undefined) line.service = service;
    line.timestamp = new Date().toISOString();
    stream.write(`${JSON.stringify(line)}\n`);
  };
}

let stdout: NodeJS.WritableStream | undefined;
function stdoutLines(): NodeJS.WritableStream {
  stdout ??= createLineBuffer();
  return stdout;
}

export function createLogger(options: LoggerOptions = {}): Logger {
  const format = options.format ?? 'json';
  // Without a stream of its own: stdout, a turn's lines in one write (line-buffer.ts), one
  // buffer for every logger of the process so their lines stay in order.
  const stream = options.stream ?? stdoutLines();
  const transport = new winston.transports.Stream({ stream });
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
  return wrap(w, accessWriter(w, format, options.service, stream));
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
    access: noop,
  };
  return l;
}
