// What a failed batch step means, which decides what ingestion does about it:
// - data: this input can never be written (Postgres rejected a value or a row, or our own code
//   threw on an event's shape). Retrying the same rows cannot help: the batch is bisected and
//   the rows that fail alone are dead-lettered.
// - conflict: a concurrent worker won a race (a person or distinct id created meanwhile, a
//   deadlock, a serialization failure). Retried with fresh reads; one that keeps happening is
//   treated as data so that it cannot hold a partition forever.
// - infrastructure: Postgres, Kafka or Redis unreachable, slow or restarting (connection errors,
//   statement timeouts, admin shutdown, too many connections, anything unknown). Retried with
//   backoff for as long as it takes, offsets not committed, readiness false meanwhile.
export type FailureKind = 'data' | 'conflict' | 'infrastructure';

// SQLSTATE classes (https://www.postgresql.org/docs/current/errcodes-appendix.html):
// 22 data exception (bad value, invalid text encoding, jsonb escape), 23 integrity constraint
// violation, 54 program limit exceeded (index row too large, jsonb nesting: stack depth).
const DATA_CLASSES = new Set(['22', '23', '54']);
// 23505 unique_violation: every insert of ours that could hit one is a lost race (person uuid
// derived from the distinct id); 40001 serialization_failure, 40P01 deadlock_detected.
const CONFLICT_CODES = new Set(['23505', '40001', '40P01']);
// Errors our own code throws on an event it does not expect (a property of the wrong shape, a
// string too long to build). Never raised by the database client for a connection problem.
const CODE_ERRORS = new Set(['TypeError', 'RangeError', 'SyntaxError', 'ReferenceError']);
const SQLSTATE = /^[0-9A-Z]{5}$/;

export function failureKind(error: unknown): FailureKind {
  if (typeof error !== 'object' || error === null) return 'infrastructure';
  const { code, name, severity } = error as { code?: unknown; name?: unknown; severity?: unknown };
  if (name === 'PersonConflictError') return 'conflict';
  // Only pg's DatabaseError carries a severity; Node's system errors (EPIPE) also have 5 letters.
  if (typeof code === 'string' && typeof severity === 'string' && SQLSTATE.test(code)) {
    if (CONFLICT_CODES.has(code)) return 'conflict';
    return DATA_CLASSES.has(code.slice(0, 2)) ? 'data' : 'infrastructure';
  }
  if (typeof name === 'string' && CODE_ERRORS.has(name)) return 'data';
  // ECONNRESET, ECONNREFUSED, ETIMEDOUT, "Connection terminated unexpectedly", "timeout exceeded
  // when trying to connect", "Query read timeout", and whatever we do not recognise.
  return 'infrastructure';
}

/** Thrown by the retry loop when the input itself was refused: the caller isolates the rows. */
export class RejectedError extends Error {
  override readonly name = 'RejectedError';
  constructor(readonly original: Error) {
    super(original.message, { cause: original });
  }
}

/** One line for a dead letter: the SQLSTATE when there is one, and the message. */
export function describeFailure(error: Error): string {
  const code = (error as { code?: unknown }).code;
  const prefix = typeof code === 'string' && SQLSTATE.test(code) ? `SQLSTATE ${code}: ` : `${error.name}: `;
  return `${prefix}${error.message}`.slice(0, 500);
}
