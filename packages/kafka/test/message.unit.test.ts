// The capture message codec: what ingestion accepts and what it sends to the dead letter topic.
import {
  createDeadLetterMessage,
  decodeCaptureMessage,
  encodeCaptureMessage,
  encodeDeadLetterMessage,
  type CaptureMessage,
} from '../src';

const message: CaptureMessage = {
  uuid: '0190b6a2-7c1e-7000-8000-000000000001',
  token: 'phc_test',
  distinct_id: 'user-1',
  ip: '127.0.0.1',
  now: '2024-07-01T12:00:00.000Z',
  sent_at: null,
  event: '$pageview',
  properties: { $current_url: 'https://example.com', nested: { a: [1, 2] } },
  timestamp: '2024-07-01T11:59:59.000Z',
  historical_migration: false,
};

const reasonOf = (value: Buffer | string | null): string => {
  const result = decodeCaptureMessage(value);
  if (result.ok) throw new Error('expected a decode failure');
  return result.reason;
};

describe('capture message codec', () => {
  it('round-trips through encode and decode, from a string and from a Buffer', () => {
    const encoded = encodeCaptureMessage(message);
    expect(decodeCaptureMessage(encoded)).toEqual({ ok: true, message });
    expect(decodeCaptureMessage(Buffer.from(encoded))).toEqual({ ok: true, message });
  });

  it('encodes fields in a fixed order and drops unknown fields', () => {
    const extra = { ...message, extra: 'x' } as CaptureMessage;
    expect(Object.keys(JSON.parse(encodeCaptureMessage(extra)))).toEqual([
      'uuid',
      'token',
      'distinct_id',
      'ip',
      'now',
      'sent_at',
      'event',
      'properties',
      'timestamp',
      'historical_migration',
    ]);
  });

  it('reads absent nullable fields as null and an absent historical_migration as false', () => {
    const { ip: _ip, sent_at: _s, timestamp: _t, historical_migration: _h, ...rest } = message;
    const result = decodeCaptureMessage(JSON.stringify(rest));
    expect(result).toEqual({
      ok: true,
      message: { ...message, ip: null, sent_at: null, timestamp: null, historical_migration: false },
    });
  });

  it('rejects empty values, bad JSON and non-objects without throwing', () => {
    expect(reasonOf(null)).toBe('empty message value');
    expect(reasonOf('')).toBe('empty message value');
    expect(reasonOf('{"uuid":')).toMatch(/^invalid JSON/);
    expect(reasonOf(Buffer.from([0xff, 0xfe, 0x00]))).toMatch(/^invalid JSON/);
    expect(reasonOf('[1,2]')).toBe('message value is not a JSON object');
    expect(reasonOf('null')).toBe('message value is not a JSON object');
    expect(reasonOf('"text"')).toBe('message value is not a JSON object');
  });

  it.each([
    ['uuid', undefined, 'uuid must be a non-empty string'],
    ['uuid', '', 'uuid must be a non-empty string'],
    ['token', 42, 'token must be a non-empty string'],
    ['distinct_id', null, 'distinct_id must be a non-empty string'],
    ['event', ['x'], 'event must be a non-empty string'],
    ['now', undefined, 'now must be a string'],
    ['ip', 123, 'ip must be a string or null'],
    ['sent_at', {}, 'sent_at must be a string or null'],
    ['timestamp', 1719835200, 'timestamp must be a string or null'],
    ['properties', undefined, 'properties must be a JSON object'],
    ['properties', [], 'properties must be a JSON object'],
    ['properties', null, 'properties must be a JSON object'],
    ['historical_migration', 'true', 'historical_migration must be a boolean'],
  ])('rejects %s = %j', (field, value, reason) => {
    const raw: Record<string, unknown> = { ...message, [field]: value };
    if (value === undefined) delete raw[field];
    expect(decodeCaptureMessage(JSON.stringify(raw))).toEqual({ ok: false, reason });
  });
});

describe('dead letter message', () => {
  const failedAt = new Date('2024-07-01T12:00:00.000Z');

  it('keeps UTF-8 values as text', () => {
    expect(
      createDeadLetterMessage({
        topic: 't',
        partition: 3,
        offset: '17',
        reason: 'bad',
        value: Buffer.from('{"a":"é"}'),
        failedAt,
      }),
    ).toEqual({
      topic: 't',
      partition: 3,
      offset: '17',
      reason: 'bad',
      value: '{"a":"é"}',
      value_encoding: 'utf8',
      failed_at: '2024-07-01T12:00:00.000Z',
    });
  });

  it('base64-encodes values that are not UTF-8, so no byte is lost', () => {
    const bytes = Buffer.from([0xff, 0x00, 0x80]);
    const dead = createDeadLetterMessage({
      topic: 't',
      partition: 0,
      offset: '1',
      reason: 'bad',
      value: bytes,
      failedAt,
    });
    expect(dead.value_encoding).toBe('base64');
    expect(Buffer.from(dead.value as string, 'base64')).toEqual(bytes);
  });

  it('keeps a null value as null', () => {
    expect(
      createDeadLetterMessage({
        topic: 't',
        partition: 0,
        offset: '1',
        reason: 'empty',
        value: null,
        failedAt,
      }).value,
    ).toBeNull();
  });

  it('stays under the Kafka limit when wrapping escapes a near-limit original, keeping its beginning', () => {
    // A 900 kB event that is mostly quotes: JSON escaping nearly doubles it.
    const original = Buffer.from(JSON.stringify({ q: '"'.repeat(900_000) }));
    const dead = createDeadLetterMessage({
      topic: 't',
      partition: 2,
      offset: '9',
      reason: 'r',
      value: original,
    });
    const encoded = encodeDeadLetterMessage(dead, 1_000_000);
    expect(Buffer.byteLength(encoded)).toBeLessThanOrEqual(1_000_000);
    const parsed = JSON.parse(encoded);
    expect(parsed).toMatchObject({ topic: 't', partition: 2, offset: '9', value_truncated: true });
    expect(parsed.value_bytes).toBe(original.length);
    expect(original.toString().startsWith(parsed.value)).toBe(true);
    expect(parsed.value.length).toBeGreaterThan(1000);
  });

  it('leaves a dead letter that fits untouched', () => {
    const dead = createDeadLetterMessage({
      topic: 't',
      partition: 0,
      offset: '1',
      reason: 'r',
      value: Buffer.from('{}'),
    });
    expect(encodeDeadLetterMessage(dead, 1_000_000)).toBe(JSON.stringify(dead));
    expect(JSON.parse(encodeDeadLetterMessage(dead, 1_000_000)).value_truncated).toBeUndefined();
  });
});
