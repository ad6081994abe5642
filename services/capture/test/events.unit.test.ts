import { AuthenticationError, ValidationError } from '@sett/http';
import { TOPICS, type CaptureMessage } from '@sett/kafka';
import { checkTokenShape, unpackBody } from '../src/events/unpack-body';
import { parseSentAt, toMessage, type RequestContext } from '../src/events/to-message';
import { routeMessage } from '../src/routing/route-events';
import { createKeyLimiter } from '../src/routing/token-bucket';

const ctx: RequestContext = {
  token: 'phc_t',
  ip: '1.2.3.4',
  now: '2025-01-01T00:00:10.000Z',
  nowMs: Date.parse('2025-01-01T00:00:10.000Z'),
  sentAt: null,
  historical: false,
};

describe('unpackBody', () => {
  it('takes the token from api_key, token, or properties.token', () => {
    expect(unpackBody({ api_key: 'a', event: 'e' }).token).toBe('a');
    expect(unpackBody({ token: 'b', event: 'e' }).token).toBe('b');
    expect(unpackBody({ event: 'e', properties: { token: 'c' } }).token).toBe('c');
    expect(unpackBody([{ event: 'e' }, { event: 'f', api_key: 'd' }]).token).toBe('d');
    expect(unpackBody({ batch: [{ event: 'e', properties: { token: 'x' } }], api_key: 'e' }).token).toBe('e');
    expect(unpackBody({ batch: [{ event: 'e', properties: { token: 'x' } }] }).token).toBe('x');
  });

  it('knows single events from arrays and batches, and reads historical_migration', () => {
    expect(unpackBody({ event: 'e' }).single).toBe(true);
    expect(unpackBody([{ event: 'e' }]).single).toBe(false);
    const b = unpackBody({
      batch: [{ event: 'e' }, { event: 'f' }],
      historical_migration: true,
      sent_at: 's',
    });
    expect(b).toMatchObject({ single: false, historical: true, sentAt: 's' });
    expect(b.events).toHaveLength(2);
  });

  it('turns legacy engage bodies into $identify events', () => {
    const b = unpackBody({ $token: 't', $distinct_id: 'd', $set: { a: 1 } }, { engage: true });
    expect(b.token).toBe('t');
    expect(b.events[0]).toEqual({
      event: '$identify',
      api_key: 't',
      distinct_id: 'd',
      properties: { $set: { a: 1 } },
    });
  });

  it.each([
    ['a string', 'hello', null],
    ['a number event name', { event: 5 }, 'event'],
    ['properties as an array', { event: 'e', properties: [] }, 'properties'],
    ['batch not an array', { batch: {} }, 'batch'],
    ['a bad array item', [{ event: 'e' }, { event: 'e', properties: 'x' }], '1.properties'],
  ])('refuses %s with a 400 naming the attribute', (_n, value, attr) => {
    const error = (() => {
      try {
        unpackBody(value);
      } catch (e) {
        return e;
      }
    })() as ValidationError;
    expect(error).toBeInstanceOf(ValidationError);
    expect(error.attr).toBe(attr);
  });
});

describe('checkTokenShape', () => {
  it('accepts and trims a project key', () => expect(checkTokenShape(' phc_abc ')).toBe('phc_abc'));
  it.each([
    [undefined, 'missing_api_key'],
    ['   ', 'missing_api_key'],
    [12, 'invalid_api_key'],
    ['x'.repeat(65), 'invalid_api_key'],
    ['phc_é', 'invalid_api_key'],
    ['phx_personal', 'invalid_api_key'],
  ])('refuses %p with 401 %s', (token, code) => {
    expect(() => checkTokenShape(token)).toThrow(AuthenticationError);
    try {
      checkTokenShape(token);
    } catch (e) {
      expect((e as AuthenticationError).code).toBe(code);
      expect((e as AuthenticationError).status).toBe(401);
    }
  });
});

describe('toMessage', () => {
  const ok = (r: ReturnType<typeof toMessage>): CaptureMessage => {
    if (!r.ok) throw new Error(r.reason);
    return r.message;
  };

  it('drops events without a name or distinct id', () => {
    expect(toMessage({ distinct_id: 'd' }, ctx)).toEqual({ ok: false, reason: 'missing_event_name' });
    expect(toMessage({ event: '', distinct_id: 'd' }, ctx)).toEqual({
      ok: false,
      reason: 'missing_event_name',
    });
    expect(toMessage({ event: 'e' }, ctx)).toEqual({ ok: false, reason: 'missing_distinct_id' });
    expect(toMessage({ event: 'e', distinct_id: '  ' }, ctx)).toEqual({
      ok: false,
      reason: 'missing_distinct_id',
    });
  });

  it('reads distinct_id from properties and stringifies numbers', () => {
    expect(ok(toMessage({ event: 'e', properties: { distinct_id: 'p' } }, ctx)).distinct_id).toBe('p');
    expect(ok(toMessage({ event: 'e', distinct_id: 42 }, ctx)).distinct_id).toBe('42');
  });

  it('keeps a valid client uuid and generates a v7 one otherwise', () => {
    const uuid = '0190f5b2-1c3a-7c4e-9a2b-1234567890ab';
    expect(ok(toMessage({ event: 'e', distinct_id: 'd', uuid }, ctx)).uuid).toBe(uuid);
    const generated = ok(toMessage({ event: 'e', distinct_id: 'd', uuid: 'nope' }, ctx)).uuid;
    expect(generated).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  });

  it('carries token, ip, now, sent_at, timestamp and historical flag', () => {
    expect(ok(toMessage({ event: 'e', distinct_id: 'd' }, ctx)).ip).toBe('1.2.3.4');
    const m = ok(
      toMessage(
        { event: 'e', distinct_id: 'd', timestamp: '2024-12-31T00:00:00Z', sent_at: '2025-01-01T00:00:09Z' },
        { ...ctx, historical: true },
      ),
    );
    expect(m).toMatchObject({
      token: 'phc_t',
      // A historical batch comes from a backfill: the sender's address is not the event's.
      ip: null,
      now: ctx.now,
      sent_at: '2025-01-01T00:00:09Z',
      timestamp: '2024-12-31T00:00:00Z',
      historical_migration: true,
      properties: {},
    });
    expect(ok(toMessage({ event: 'e', distinct_id: 'd', offset: 1000 }, ctx)).timestamp).toBe(
      '2025-01-01T00:00:09.000Z',
    );
  });

  it('merges top-level $set into properties', () => {
    const m = ok(
      toMessage(
        { event: '$identify', distinct_id: 'd', $set: { a: 1, b: 1 }, properties: { $set: { b: 2 } } },
        ctx,
      ),
    );
    expect(m.properties.$set).toEqual({ a: 1, b: 2 });
  });
});

describe('parseSentAt', () => {
  it('prefers the _ query param (ms) over the body', () => {
    expect(parseSentAt('1735689600000', '2020-01-01T00:00:00Z')).toBe('2025-01-01T00:00:00.000Z');
    expect(parseSentAt(undefined, '2020-01-01T00:00:00Z')).toBe('2020-01-01T00:00:00Z');
    expect(parseSentAt('abc', 'not a date')).toBeNull();
  });
});

describe('routeMessage', () => {
  const m = (historical: boolean) => ok2({ event: 'e', distinct_id: 'd' }, historical);
  const ok2 = (e: Record<string, unknown>, historical: boolean) => {
    const r = toMessage(e, { ...ctx, historical });
    if (!r.ok) throw new Error('dropped');
    return r.message;
  };

  it('keys live events by token:distinct_id and overflows a spiking key without a key', () => {
    const limiter = createKeyLimiter({ ratePerSecond: 0, burst: 2, now: () => 0 });
    const routes = [1, 2, 3].map(() => routeMessage(m(false), 'v', limiter));
    expect(routes.map((r) => r.topic)).toEqual([TOPICS.main, TOPICS.main, TOPICS.overflow]);
    expect(routes.map((r) => r.message.key)).toEqual(['phc_t:d', 'phc_t:d', null]);
  });

  it('sends historical events to the historical topic, keyed, never overflowed', () => {
    const limiter = createKeyLimiter({ ratePerSecond: 0, burst: 1, now: () => 0 });
    const routes = [1, 2, 3].map(() => routeMessage(m(true), 'v', limiter));
    expect(routes.every((r) => r.topic === TOPICS.historical && r.message.key === 'phc_t:d')).toBe(true);
  });

  it('never overflows without a limiter', () => {
    expect(routeMessage(m(false), 'v', null).topic).toBe(TOPICS.main);
  });
});
