// The pure halves of the input rules and of the database error mapping, with error shapes as
// pg 8 and Prisma 6 on @prisma/adapter-pg really produce them (the integration tests produce
// them from a live or silent Postgres).
import { ServiceUnavailableError, ValidationError } from '@sett/http';
import { toDatabaseSettError } from '../src/database-errors';
import { checkPath, checkQueryAndBody } from '../src/input-rules';

function thrown(fn: () => void): ValidationError | undefined {
  try {
    fn();
  } catch (err) {
    return err as ValidationError;
  }
  return undefined;
}

describe('checkPath', () => {
  test.each([
    ['/api/users/%E0%A4%A/', 'invalid_path'],
    ['/api/users/%/', 'invalid_path'],
    ['/api/users/%ED%A0%80/', 'invalid_path'], // an encoded surrogate is not UTF-8
    ['/api/personal_api_keys/a%00b/', 'null_characters_not_allowed'],
  ])('%s → 400 %s', (path, code) => {
    expect(thrown(() => checkPath(path))).toMatchObject({ status: 400, code, attr: 'path' });
  });

  test('ordinary and percent-encoded UTF-8 paths pass', () => {
    expect(thrown(() => checkPath('/api/users/@me/'))).toBeUndefined();
    expect(thrown(() => checkPath('/api/personal_api_keys/%C3%BC%F0%9F%98%80/'))).toBeUndefined();
  });
});

describe('checkQueryAndBody', () => {
  test('names the query parameter, then the body field', () => {
    expect(thrown(() => checkQueryAndBody({ distinct_id: 'a\u0000' }, {}))).toMatchObject({
      attr: 'distinct_id',
      code: 'null_characters_not_allowed',
    });
    expect(
      thrown(() => checkQueryAndBody({}, { filters: { groups: [{ variant: '\udfff' }] } })),
    ).toMatchObject({
      attr: 'filters.groups[0].variant',
      code: 'surrogate_characters_not_allowed',
    });
  });

  test('depth: 64 containers pass, 65 are refused, however deep the input goes', () => {
    const nest = (n: number) => {
      let v: unknown = 1;
      for (let i = 0; i < n; i++) v = [v];
      return v;
    };
    expect(thrown(() => checkQueryAndBody({}, nest(64)))).toBeUndefined();
    expect(thrown(() => checkQueryAndBody({}, nest(65)))).toMatchObject({ code: 'too_deep' });
    expect(thrown(() => checkQueryAndBody({}, nest(100_000)))).toMatchObject({ code: 'too_deep' });
  });

  test('a surrogate pair (an emoji) and an undefined body pass', () => {
    expect(thrown(() => checkQueryAndBody({ q: '😀' }, { name: '😀' }))).toBeUndefined();
    expect(thrown(() => checkQueryAndBody({}, undefined))).toBeUndefined();
  });
});

describe('toDatabaseSettError', () => {
  const withCause = (message: string, cause?: unknown) => Object.assign(new Error(message), { cause });

  test.each<[string, unknown]>([
    [
      'pg connect timeout',
      withCause(
        'Connection terminated due to connection timeout',
        new Error('Connection terminated unexpectedly'),
      ),
    ],
    ['pg client query timeout', new Error('Query read timeout')],
    ['pg pool wait timeout', new Error('timeout exceeded when trying to connect')],
    [
      'connection refused',
      Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:1'), { code: 'ECONNREFUSED' }),
    ],
    ['admin shutdown', Object.assign(new Error('terminating connection'), { code: '57P01' })],
    ['connection exception class 08', Object.assign(new Error('x'), { code: '08006' })],
    [
      'Prisma P1001 via the adapter',
      {
        name: 'PrismaClientKnownRequestError',
        code: 'P1001',
        meta: { driverAdapterError: { name: 'DriverAdapterError', cause: { kind: 'DatabaseNotReachable' } } },
      },
    ],
    ['Prisma pool timeout P2024', { name: 'PrismaClientKnownRequestError', code: 'P2024' }],
    ['Prisma init error', { name: 'PrismaClientInitializationError', errorCode: 'P1001' }],
    ['adapter socket timeout', { name: 'DriverAdapterError', cause: { kind: 'SocketTimeout' } }],
    [
      'timeout deep in a cause chain',
      withCause('outer', withCause('middle', new Error('Query read timeout'))),
    ],
  ])('%s → 503 with Retry-After', (_name, err) => {
    const mapped = toDatabaseSettError(err);
    expect(mapped).toBeInstanceOf(ServiceUnavailableError);
    expect(mapped!.headers['Retry-After']).toBe('5');
  });

  test.each<[string, unknown]>([
    [
      'statement timeout',
      Object.assign(new Error('canceling statement due to statement timeout'), { code: '57014' }),
    ],
    [
      'adapter error wrapping a statement timeout',
      { name: 'DriverAdapterError', cause: { kind: 'postgres', code: '57014' } },
    ],
  ])('%s → 504 (the work was too large; the database is there)', (_name, err) => {
    expect(toDatabaseSettError(err)).toMatchObject({ status: 504, code: 'timeout' });
  });

  test('a protocol violation (08P01) and invalid SQL (42xxx) are bugs: left to the 500 mapping', () => {
    expect(
      toDatabaseSettError({ code: '08P01', message: 'bind message supplies 5 parameters' }),
    ).toBeUndefined();
    expect(toDatabaseSettError({ code: '42P18' })).toBeUndefined();
  });

  test('a regular expression Postgres cannot run (2201B) → 400 saying so', () => {
    const mapped = toDatabaseSettError({
      code: '2201B',
      message: 'invalid regular expression: invalid escape \\ sequence',
    });
    expect(mapped).toMatchObject({ status: 400, attr: 'properties' });
    expect(mapped!.message).toContain('cannot run on the database');
  });

  test('P2025 → 404, P2002 → 409 naming the field (both shapes), 22xxx → 400, URIError → 400', () => {
    expect(toDatabaseSettError({ code: 'P2025' })).toMatchObject({ status: 404 });
    expect(toDatabaseSettError({ code: 'P2002', meta: { target: ['email'] } })).toMatchObject({
      status: 409,
      attr: 'email',
    });
    expect(
      toDatabaseSettError({
        code: 'P2002',
        meta: {
          driverAdapterError: {
            cause: { kind: 'UniqueConstraintViolation', constraint: { fields: ['"email"'] } },
          },
        },
      }),
    ).toMatchObject({ status: 409, attr: 'email' });
    expect(toDatabaseSettError({ code: '22008' })).toMatchObject({ status: 400 });
    expect(toDatabaseSettError(new URIError('URI malformed'))).toMatchObject({ status: 400, attr: 'path' });
  });

  test('everything else is left to the error middleware (500), and cycles end', () => {
    expect(toDatabaseSettError(new Error('boom'))).toBeUndefined();
    expect(toDatabaseSettError({ code: '42601' })).toBeUndefined();
    expect(toDatabaseSettError(new ValidationError('x'))).toBeUndefined();
    const a: { message: string; cause?: unknown } = { message: 'a' };
    a.cause = a;
    expect(toDatabaseSettError(a)).toBeUndefined();
    expect(toDatabaseSettError(undefined)).toBeUndefined();
  });
});
