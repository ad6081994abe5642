import { failureKind } from '../../src/pipeline/failure-kind';
import { PersonConflictError } from '../../src/persons/person-store';

// The shape of pg's DatabaseError: a SQLSTATE code and a severity.
const pgError = (code: string) => Object.assign(new Error(`sqlstate ${code}`), { code, severity: 'ERROR' });
const systemError = (code: string) => Object.assign(new Error(`connect ${code}`), { code, errno: -1 });

describe('failureKind', () => {
  it('calls refused values and rows data (SQLSTATE 22, 23, 54) and our code throwing on an event', () => {
    for (const code of ['22P02', '22021', '22P05', '23502', '23514', '23503', '54000', '54001'])
      expect([code, failureKind(pgError(code))]).toEqual([code, 'data']);
    expect(failureKind(new TypeError("Cannot read properties of undefined (reading 'x')"))).toBe('data');
    expect(failureKind(new RangeError('Invalid string length'))).toBe('data');
  });

  it('calls lost races conflicts', () => {
    for (const code of ['23505', '40001', '40P01']) expect(failureKind(pgError(code))).toBe('conflict');
    expect(failureKind(new PersonConflictError('1 distinct id claimed concurrently'))).toBe('conflict');
  });

  it('calls unreachable, slow or restarting infrastructure infrastructure, and anything unknown', () => {
    // 57014 statement_timeout, 57P01 admin shutdown, 08006 connection failure, 53300 too many
    // connections, 55P03 lock not available, XX000 internal error.
    for (const code of ['57014', '57P01', '08006', '08001', '53300', '55P03', 'XX000'])
      expect([code, failureKind(pgError(code))]).toEqual([code, 'infrastructure']);
    for (const code of ['ECONNRESET', 'ECONNREFUSED', 'ETIMEDOUT', 'EPIPE'])
      expect(failureKind(systemError(code))).toBe('infrastructure');
    expect(failureKind(new Error('Connection terminated unexpectedly'))).toBe('infrastructure');
    expect(failureKind(new Error('timeout exceeded when trying to connect'))).toBe('infrastructure');
    expect(failureKind({ code: '22P02' })).toBe('infrastructure'); // not from Postgres
    expect(failureKind(undefined)).toBe('infrastructure');
  });
});
