import { PassThrough } from 'node:stream';
import { createLogger, currentRequestId, REDACTED, runWithRequestId } from '../src';

function capture(format: 'json' | 'pretty' = 'json', level: 'info' | 'debug' = 'info') {
  const stream = new PassThrough();
  const lines: string[] = [];
  stream.on('data', (chunk: Buffer) => lines.push(...chunk.toString().split('\n').filter(Boolean)));
  return { logger: createLogger({ stream, format, level, service: 'test' }), lines };
}

const flush = () => new Promise((r) => setImmediate(r));

describe('logger', () => {
  it('writes JSON lines with context from child loggers', async () => {
    const { logger, lines } = capture();
    logger.child({ batch: 7 }).info('batch done', { events: 3 });
    await flush();
    expect(lines).toHaveLength(1);
    const rec = JSON.parse(lines[0]!);
    expect(rec).toMatchObject({ level: 'info', message: 'batch done', service: 'test', batch: 7, events: 3 });
    expect(typeof rec.timestamp).toBe('string');
  });

  it('redacts api keys, passwords and Authorization headers', async () => {
    const { logger, lines } = capture();
    logger.info('request', {
      api_key: 'phc_projectkey123456',
      body: { password: 'hunter2', current_password: 'old-secret', nested: { token: 'abc' } },
      headers: { authorization: 'Bearer phx_personal_key_1234', 'x-other': 'fine' },
      note: 'sent by phx_abcdefgh1234 with Bearer sometokenvalue',
    });
    await flush();
    const text = lines.join('\n');
    for (const secret of [
      'phc_projectkey123456',
      'hunter2',
      'old-secret',
      'phx_personal_key_1234',
      'phx_abcdefgh1234',
      'sometokenvalue',
      '"abc"',
    ]) {
      expect(text).not.toContain(secret);
    }
    const rec = JSON.parse(lines[0]!);
    expect(rec.api_key).toBe(REDACTED);
    expect(rec.body.password).toBe(REDACTED);
    expect(rec.headers.authorization).toBe(REDACTED);
    expect(rec.headers['x-other']).toBe('fine');
  });

  it('redacts secrets in the message itself and in errors', async () => {
    const { logger, lines } = capture();
    logger.error('bad key phc_leakedkey999', { err: new Error('token phx_zzzzzzzz failed') });
    await flush();
    expect(lines.join('\n')).not.toMatch(/phc_leakedkey999|phx_zzzzzzzz/);
  });

  it('writes readable lines in development format and honours the level', async () => {
    const { logger, lines } = capture('pretty', 'info');
    logger.debug('hidden');
    logger.info('listening', { port: 8000 });
    await flush();
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/info\s+\[test\] listening \{"port":8000\}/);
    expect(() => JSON.parse(lines[0]!)).toThrow();
  });
});

describe('request context', () => {
  it('names the request on every line written while it is served, across awaits', async () => {
    const { logger, lines } = capture();
    await runWithRequestId('req-1', async () => {
      logger.info('first');
      await new Promise((r) => setImmediate(r));
      logger.child({ step: 2 }).warn('second');
    });
    logger.info('outside');
    await flush();
    const records = lines.map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(records.map((r) => r.request_id)).toEqual(['req-1', 'req-1', undefined]);
    expect(currentRequestId()).toBeUndefined();
  });

  it('keeps concurrent requests apart', async () => {
    const { logger, lines } = capture();
    const serve = (id: string, delay: number) =>
      runWithRequestId(id, async () => {
        await new Promise((r) => setTimeout(r, delay));
        logger.info('done');
      });
    await Promise.all([serve('a', 5), serve('b', 0)]);
    await flush();
    const ids = lines.map((l) => (JSON.parse(l) as Record<string, unknown>).request_id).sort();
    expect(ids).toEqual(['a', 'b']);
  });

  it('writes access lines as info lines are written, redacted, and only at info', async () => {
    const { logger, lines } = capture();
    logger.child({ worker: 2, skipped: { nested: true } }).access({
      request_id: 'phx_abcdefgh12345678',
      route: '/api/users/:uuid/',
      status: 200,
      key_prefix: undefined,
    });
    logger.info('request', { route: '/x/' });
    await flush();
    const [access, info] = lines.map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(Object.keys(access!).sort()).toEqual(
      ['level', 'message', 'request_id', 'route', 'service', 'status', 'timestamp', 'worker'].sort(),
    );
    expect(access).toMatchObject({
      level: 'info',
      message: 'request',
      service: 'test',
      status: 200,
      worker: 2,
    });
    expect(access!.request_id).not.toContain('abcdefgh12345678');
    expect(access!.request_id).toContain(REDACTED);
    expect(
      Object.keys(info!)
        .filter((k) => !['route'].includes(k))
        .sort(),
    ).toEqual(['level', 'message', 'service', 'timestamp'].sort());

    const quiet = new PassThrough();
    const written: string[] = [];
    quiet.on('data', (chunk: Buffer) => written.push(chunk.toString()));
    createLogger({ stream: quiet, level: 'warn' }).access({ route: '/x/' });
    await flush();
    expect(written).toEqual([]);
  });
});
