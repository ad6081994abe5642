// Property-based fuzzing of ingestion's prepare step (decode, validate, clean): on any Kafka
// value, JSON or not, message-shaped or not, it never throws, and what it passes on as ok is
// storable by Postgres (no NUL, no lone surrogate in the event name, distinct id or properties
// JSON) with a real timestamp; everything else is an explicit drop or dlq.
import fc from 'fast-check';
import { prepareMessage } from '../../../services/ingestion/src/pipeline/prepare';
import { deepJson, oddJson, oddString, unstorableJson, unstorableText } from './arbitraries';

const RUNS = 300;
const NOW = Date.UTC(2024, 5, 1);

function check(value: Buffer | null): void {
  let result: ReturnType<typeof prepareMessage>;
  try {
    result = prepareMessage(value, '0', () => NOW);
  } catch (error) {
    throw new Error(`prepareMessage threw ${(error as Error).name}: ${(error as Error).message}`);
  }
  if (result.kind !== 'ok') {
    expect(['drop', 'dlq']).toContain(result.kind);
    expect(typeof result.reason).toBe('string');
    return;
  }
  const e = result.value;
  const problems = [
    unstorableText(e.event) && `event ${unstorableText(e.event)}`,
    unstorableText(e.distinctId) && `distinct id ${unstorableText(e.distinctId)}`,
    unstorableJson(e.propertiesJson) && `properties ${unstorableJson(e.propertiesJson)}`,
    Number.isNaN(new Date(e.timestamp).getTime()) && `timestamp ${e.timestamp}`,
  ].filter(Boolean);
  expect(problems).toEqual([]);
}

const timestampish = fc.oneof(
  fc.date({ noInvalidDate: true }).map((d) => d.toISOString()),
  fc.constantFrom(
    '-271821-04-20T00:00:00Z',
    '+275760-09-13T00:00:00Z',
    '0000-01-01T00:00:00Z',
    '',
    'NaN',
    '1e400',
  ),
  oddString,
  oddJson,
);

const messageShaped = fc.record(
  {
    uuid: fc.oneof(fc.uuid(), oddString, oddJson),
    token: fc.oneof(fc.constant('phc_test'), oddString, oddJson),
    distinct_id: fc.oneof(oddString, oddJson),
    event: fc.oneof(oddString, oddJson),
    ip: fc.oneof(fc.constant(null), fc.ipV4(), oddString, oddJson),
    now: timestampish,
    sent_at: fc.oneof(fc.constant(null), timestampish),
    timestamp: fc.oneof(fc.constant(null), timestampish),
    properties: fc.oneof(
      fc.dictionary(oddString, oddJson, { maxKeys: 8 }),
      oddJson,
      deepJson.map((d) => ({ deep: d })),
    ),
    historical_migration: fc.oneof(fc.boolean(), oddJson),
  },
  { requiredKeys: [] },
);

/** Well-typed messages, so the validation and cleaning after decoding get exercised too. */
const wellTyped = fc.record({
  uuid: fc.uuid(),
  token: fc.constant('phc_test'),
  distinct_id: oddString,
  event: oddString,
  ip: fc.constant(null),
  now: fc.constant(new Date(NOW).toISOString()),
  sent_at: fc.oneof(
    fc.constant(null),
    timestampish.filter((t): t is string => typeof t === 'string'),
  ),
  timestamp: fc.oneof(
    fc.constant(null),
    timestampish.filter((t): t is string => typeof t === 'string'),
  ),
  properties: fc.oneof(
    fc.dictionary(oddString, oddJson, { maxKeys: 8 }),
    deepJson.map((d) => ({ deep: d })),
  ),
  historical_migration: fc.boolean(),
});

const encode = (v: unknown) => Buffer.from(JSON.stringify(v) ?? 'null', 'utf8');

describe('ingestion prepareMessage under hostile input', () => {
  it('has a storability check that finds NUL and lone surrogates (and nothing else)', () => {
    expect(unstorableJson(JSON.stringify({ a: '\u0000' }))).toBeDefined();
    expect(unstorableJson(JSON.stringify({ a: 'x\udc00' }))).toBeDefined();
    expect(unstorableText('\ud800')).toBeDefined();
    expect(unstorableJson(JSON.stringify({ a: '\\u0000', b: '😀', c: '\ufffd' }))).toBeUndefined();
  });

  it('never throws on arbitrary JSON values', () => {
    fc.assert(
      fc.property(oddJson, (v) => check(encode(v))),
      { numRuns: RUNS },
    );
  });

  it('never throws on message-shaped values with wrong types and odd strings', () => {
    fc.assert(
      fc.property(messageShaped, (m) => check(encode(m))),
      { numRuns: RUNS },
    );
  });

  it('passes on only storable events from well-typed messages with NUL and lone surrogates', () => {
    fc.assert(
      fc.property(wellTyped, (m) => check(encode(m))),
      { numRuns: RUNS },
    );
  });

  it('never throws on raw bytes (invalid UTF-8, truncated JSON, nothing)', () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.uint8Array({ maxLength: 64 }),
          wellTyped.map((m) => encode(m).subarray(0, 40)),
        ),
        (bytes) => check(Buffer.from(bytes)),
      ),
      { numRuns: RUNS },
    );
    check(null);
    check(Buffer.alloc(0));
  });

  it('handles properties nested 100k deep with NUL at the bottom', () => {
    for (const shape of ['array', 'object'] as const) {
      let deep = '"\\u0000\\ud800"';
      for (let i = 0; i < 100_000; i++) deep = shape === 'array' ? `[${deep}]` : `{"a":${deep}}`;
      const text = `{"uuid":"0190f0e0-0000-7000-8000-000000000000","token":"phc_test","distinct_id":"d","event":"e","ip":null,"now":"2024-06-01T00:00:00.000Z","sent_at":null,"timestamp":null,"properties":{"deep":${deep}},"historical_migration":false}`;
      check(Buffer.from(text));
    }
  });
});
