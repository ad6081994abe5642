// The safety net between management's handlers and the one error mapping (the route
// mechanism's `mapError`, so it sees every error of a request, authentication included): errors
// of pg, Prisma and its pg adapter, and the router's URIError, become meaningful statuses
// instead of 500. Handlers validate up front (so their messages name the field); this catches what only
// the database can know (a row deleted or a unique value taken by a concurrent request) and a
// database that cannot answer. By cause:
// - the connection is lost or cannot be had (connect timeout, client query timeout, SQLSTATE
//   class 08 but 08P01, 53300, 57P0x, Prisma P1001/P1002/P1008/P1017/P2024/P2028) → 503
//   `unavailable_error` with Retry-After: retrying later can succeed;
// - a statement cancelled by its timeout (57014) → 504: the work was too large, not the
//   database gone (a client retrying at once would only repeat it);
// - record to change not found (Prisma P2025) → 404; unique violation (P2002, 23505) → 409;
// - a regular expression Postgres cannot run (2201B) → 400 saying so;
// - other data exceptions (SQLSTATE class 22, e.g. a value out of range) → 400;
// - a path the router cannot percent-decode (URIError) → 400;
// - SQL Sett wrote wrong (class 42, a protocol violation 08P01) → left to the one 500 mapping
//   (logged with an error id), counted in management_database_invalid_sql_total, which alerts:
//   no client input can fix it, and retrying cannot either.
import {
  ConflictError,
  NotFoundError,
  prom,
  ServiceUnavailableError,
  SettError,
  TimeoutError,
  ValidationError,
} from '@sett/http';

const RETRY_AFTER_SECONDS = 5;

// pg and node-postgres messages for a Postgres that does not answer or went away.
// ("Connection terminated" covers "... due to connection timeout" and "... unexpectedly".)
const UNAVAILABLE_MESSAGES = [
  'Connection terminated',
  'timeout exceeded when trying to connect',
  'Query read timeout',
];
const UNAVAILABLE_NODE_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'ENOTFOUND',
  'EHOSTUNREACH',
]);
const UNAVAILABLE_PRISMA_CODES = new Set(['P1001', 'P1002', 'P1008', 'P1017', 'P2024', 'P2028']);
// Kinds of @prisma/driver-adapter-utils' MappedError that mean "the database is not there".
const UNAVAILABLE_ADAPTER_KINDS = new Set([
  'DatabaseNotReachable',
  'SocketTimeout',
  'ConnectionClosed',
  'TooManyConnections',
  'TransactionAlreadyClosed',
]);

interface ErrorLike {
  name?: string;
  message?: string;
  code?: unknown;
  errorCode?: unknown;
  kind?: unknown;
  originalCode?: unknown;
  meta?: Record<string, unknown>;
  cause?: unknown;
}

function unavailable(): ServiceUnavailableError {
  return new ServiceUnavailableError('The database is not answering; retry later.', RETRY_AFTER_SECONDS);
}

/** A SQLSTATE that says Sett's own SQL is wrong (syntax, names, types, parameters). */
export function isInvalidSqlState(state: string): boolean {
  return state.startsWith('42') || state === '08P01';
}

/** The SettError for a SQLSTATE, or undefined. */
function fromSqlState(state: string, message = ''): SettError | undefined {
  if (state === '57014')
    return new TimeoutError(
      'The database did not finish in time: narrow the request, or retry later.',
      'timeout',
    );
  if ((state.startsWith('08') && state !== '08P01') || state === '53300' || /^57P0[1-3]$/.test(state))
    return unavailable();
  if (state === '23505') return new ConflictError('This value is already taken.');
  if (state === '2201B')
    return new ValidationError(
      `A regular expression cannot run on the database (${message.slice(0, 200)}): write it without Unicode classes, counted repeats over 255 or named groups.`,
      'properties',
      'invalid_input',
    );
  if (state.startsWith('22'))
    return new ValidationError('A value is out of the range the database can store.', null, 'invalid_input');
  return undefined;
}

/** Fields named by a Prisma unique violation, in both the classic and the adapter shape. */
function uniqueFields(meta: Record<string, unknown> | undefined): string[] {
  const target = meta?.target;
  if (Array.isArray(target)) return target.map(String);
  const adapter = meta?.driverAdapterError as { cause?: { constraint?: { fields?: unknown } } } | undefined;
  const fields = adapter?.cause?.constraint?.fields;
  return Array.isArray(fields) ? fields.map((f) => String(f).replace(/"/g, '')) : [];
}

function fromOne(e: ErrorLike): SettError | undefined {
  const code =
    typeof e.code === 'string' ? e.code : typeof e.errorCode === 'string' ? e.errorCode : undefined;
  if (code && /^P\d{4}$/.test(code)) {
    if (UNAVAILABLE_PRISMA_CODES.has(code)) return unavailable();
    if (code === 'P2025') return new NotFoundError();
    if (code === 'P2002') {
      const fields = uniqueFields(e.meta);
      const attr = fields.length === 1 ? fields[0]! : null;
      return new ConflictError(
        attr ? `This ${attr} is already taken.` : 'This value is already taken.',
        attr,
      );
    }
    return undefined;
  }
  if (code && /^[0-9A-Z]{5}$/.test(code)) {
    const mapped = fromSqlState(code, e.message);
    if (mapped) return mapped;
  }
  if (code && UNAVAILABLE_NODE_CODES.has(code)) return unavailable();
  // The adapter's MappedError: {kind, originalCode?}.
  if (typeof e.kind === 'string') {
    if (UNAVAILABLE_ADAPTER_KINDS.has(e.kind)) return unavailable();
    if (e.kind === 'postgres' && typeof e.code === 'string') return fromSqlState(e.code, e.message);
    if (typeof e.originalCode === 'string') return fromSqlState(e.originalCode);
  }
  const message = e.message ?? '';
  if (UNAVAILABLE_MESSAGES.some((m) => message.startsWith(m))) return unavailable();
  if (e.name === 'URIError' || /^Failed to decode param/.test(message))
    return new ValidationError(
      'The URL path is not valid percent-encoding of UTF-8.',
      'path',
      'invalid_path',
    );
  return undefined;
}

/** The SettError a database (or router) error stands for, looking through `cause`; else undefined. */
export function toDatabaseSettError(err: unknown): SettError | undefined {
  let current: unknown = err;
  // Bounded: a cause chain is a handful of wrappers, never a cycle we follow forever.
  for (let i = 0; i < 8 && current && typeof current === 'object'; i++) {
    if (current instanceof SettError) return undefined;
    const mapped = fromOne(current as ErrorLike);
    if (mapped) return mapped;
    const e = current as ErrorLike;
    current = e.cause ?? (e.meta?.driverAdapterError as ErrorLike | undefined);
  }
  return undefined;
}

/** The SQLSTATE of an error or of one in its cause chain, or undefined. */
function sqlStateOf(err: unknown): string | undefined {
  let current: unknown = err;
  for (let i = 0; i < 8 && current && typeof current === 'object'; i++) {
    const e = current as ErrorLike;
    for (const code of [e.code, e.originalCode])
      if (typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code) && !/^P\d{4}$/.test(code)) return code;
    current = e.cause ?? (e.meta?.driverAdapterError as ErrorLike | undefined);
  }
  return undefined;
}

/**
 * toDatabaseSettError for the route mechanism's `mapError`, counting the errors that say Sett's
 * SQL is wrong (left to the 500 mapping) in management_database_invalid_sql_total.
 */
export function createDatabaseErrorMapper(registry: prom.Registry): (err: unknown) => SettError | undefined {
  const invalid = new prom.Counter({
    name: 'management_database_invalid_sql_total',
    help: 'Statements Postgres refused as invalid SQL (class 42, 08P01): a bug in Sett, answered 500',
    registers: [registry],
  });
  invalid.inc(0);
  return (err) => {
    const mapped = toDatabaseSettError(err);
    if (mapped) return mapped;
    const state = sqlStateOf(err);
    if (state && isInvalidSqlState(state)) invalid.inc();
    return undefined;
  };
}
