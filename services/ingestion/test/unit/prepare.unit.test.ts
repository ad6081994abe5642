import { encodeCaptureMessage, type CaptureMessage } from '@sett/kafka';
import { MAX_JSON_DEPTH } from '@sett/schemas';
import { prepareMessage } from '../../src/pipeline/prepare';

const base: CaptureMessage = {
  uuid: '0190a8a0-0000-7000-8000-000000000001',
  token: 'phc_x',
  distinct_id: 'u1',
  ip: '10.0.0.1',
  now: '2024-05-01T12:00:00.000Z',
  sent_at: null,
  event: '$pageview',
  properties: { $current_url: 'https://x.test/' },
  timestamp: '2024-05-01T11:00:00.000Z',
  historical_migration: false,
};
const enc = (m: Partial<CaptureMessage> | Record<string, unknown>) =>
  Buffer.from(encodeCaptureMessage({ ...base, ...m } as CaptureMessage));

describe('prepareMessage', () => {
  it('turns a capture message into a prepared event', () => {
    const r = prepareMessage(enc({}), '7');
    expect(r).toEqual({
      kind: 'ok',
      value: expect.objectContaining({
        offset: '7',
        uuid: base.uuid,
        distinctId: 'u1',
        event: '$pageview',
        properties: { $current_url: 'https://x.test/', $ip: '10.0.0.1' },
        timestamp: '2024-05-01T11:00:00.000Z',
        processPerson: true,
        historical: false,
      }),
    });
    if (r.kind === 'ok') expect(JSON.parse(r.value.propertiesJson)).toEqual(r.value.properties);
  });

  it('drops events without name or distinct_id (docs/interface.md, Events that are not ingested) and dead-letters malformed messages', () => {
    expect(prepareMessage(Buffer.from(JSON.stringify({ ...base, event: '' })), '1')).toEqual({
      kind: 'drop',
      reason: 'missing_event_name',
    });
    expect(prepareMessage(Buffer.from(JSON.stringify({ ...base, distinct_id: null })), '1')).toEqual({
      kind: 'drop',
      reason: 'missing_distinct_id',
    });
    expect(prepareMessage(Buffer.from('{not json'), '1').kind).toBe('dlq');
    expect(prepareMessage(null, '1').kind).toBe('dlq');
    expect(prepareMessage(Buffer.from(JSON.stringify({ ...base, properties: [] })), '1')).toEqual({
      kind: 'dlq',
      reason: expect.stringContaining('properties'),
    });
    expect(prepareMessage(enc({ uuid: 'not-a-uuid' }), '1')).toEqual({
      kind: 'dlq',
      reason: expect.stringContaining('uuid'),
    });
  });

  it('marks personless events and truncates long names like PostHog', () => {
    const r = prepareMessage(
      enc({
        properties: { $process_person_profile: false },
        event: 'e'.repeat(300),
        distinct_id: 'd'.repeat(300),
      }),
      '1',
    );
    expect(r.kind).toBe('ok');
    if (r.kind !== 'ok') return;
    expect(r.value.processPerson).toBe(false);
    expect(r.value.event).toHaveLength(200);
    expect(r.value.distinctId).toHaveLength(200);
  });

  it('replaces NUL characters and lone surrogates that Postgres cannot store', () => {
    const r = prepareMessage(
      enc({ distinct_id: 'a\u0000b', properties: { 'k\u0000': ['x\u0000', { y: 'bad\ud800' }], ok: '😀' } }),
      '1',
    );
    expect(r.kind).toBe('ok');
    if (r.kind !== 'ok') return;
    expect(r.value.distinctId).toBe('a\ufffdb');
    expect(r.value.properties).toEqual({
      'k\ufffd': ['x\ufffd', { y: 'bad\ufffd' }],
      ok: '😀',
      $ip: '10.0.0.1',
    });
    expect(r.value.propertiesJson).not.toMatch(/\\u0000|\\ud800/);
  });

  it('dead-letters properties nested past MAX_JSON_DEPTH without overflowing the stack', () => {
    // The outage: arrays 3000 deep with a NUL at the bottom; and one far past V8's stack.
    for (const depth of [3000, 100_000]) {
      const value = Buffer.from(
        encodeCaptureMessage({ ...base, properties: {} }).replace(
          '"properties":{}',
          `"properties":{"deep":${'['.repeat(depth)}"\\u0000"${']'.repeat(depth)}}`,
        ),
      );
      expect(prepareMessage(value, '1')).toEqual({
        kind: 'dlq',
        reason: `properties nest deeper than ${MAX_JSON_DEPTH} levels`,
      });
    }
    // The limit itself is accepted (properties object = level 1) and cleaned.
    let deep: unknown = 'x\u0000';
    for (let i = 1; i < MAX_JSON_DEPTH; i++) deep = [deep];
    const r = prepareMessage(enc({ properties: { deep } }), '1');
    expect(r.kind).toBe('ok');
    if (r.kind === 'ok') expect(r.value.propertiesJson).toContain('x\ufffd');
  });

  it('dead-letters a token Postgres cannot compare with, and never leaves half a surrogate pair', () => {
    expect(prepareMessage(enc({ token: 'phc_\u0000' }), '1')).toEqual({
      kind: 'dlq',
      reason: 'token holds an unstorable character (nul)',
    });
    const r = prepareMessage(enc({ distinct_id: `${'d'.repeat(199)}😀` }), '1');
    expect(r.kind === 'ok' && r.value.distinctId).toBe(`${'d'.repeat(199)}\ufffd`);
  });
});
