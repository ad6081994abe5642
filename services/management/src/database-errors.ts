// The safety net between management's handlers and the one error mapping (the route
// mechanism's `mapError`, so it sees every error of a request, authentication included): errors
// of pg, Prisma and its pg adapter, and the router's URIError, become meaningful statuses
// instead of 500. Handlers validate up front (so their messages name the field); this catches what only
// the database can know (a row deleted or a unique value taken by a concurrent request) and a
// database that cannot answer:
// - unreachable or too slow (connect timeout, client query timeout, statement_timeout 57014,
//   SQLSTATE class 08, 53300, 57P0x, Prisma P1001/P1002/P1008/P1017/P2024/P2028) → 503
//   `unavailable_error` with Retry-After;
// - record to change not found (Prisma P2025) → 404; unique violation (P2002, 23505) → 409;
// - data exceptions (SQLSTATE class 22, e.g. a value out of range) → 400;
// - a path the router cannot percent-decode (URIError) → 400.
import {
  ConflictError,
  NotFoundError,
  ServiceUnavailableError,
  SettError,
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

/** The SettError for a SQLSTATE, or undefined. */
function fromSqlState(state: string): SettError | undefined {
  if (state === '57014' || state.startsWith('08') || state === '53300' || /^57P0[1-3]$/.test(state))
    return unavailable();
  if (state === '23505') return new ConflictError('This value is already taken.');
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
    const mapped = fromSqlState(code);
    if (mapped) return mapped;
  }
  if (code && UNAVAILABLE_NODE_CODES.has(code)) return unavailable();
  // The adapter's MappedError: {kind, originalCode?}.
  if (typeof e.kind === 'string') {
    if (UNAVAILABLE_ADAPTER_KINDS.has(e.kind)) return unavailable();
    if (e.kind === 'postgres' && typeof e.code === 'string') return fromSqlState(e.code);
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
