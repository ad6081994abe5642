// The pure parts of `sett import`: timestamps, the three formats, deterministic uuids, the size
// limit, CSV records, and the send lanes' order and checkpoint watermark.
import { convertRecord, parseTimestamp, type ConvertContext } from '../src/import/import-event';
import { csvToEvent, parseCsvFields, parseCsvHeader } from '../src/import/csv-record';
import { createSendLanes } from '../src/import/send-lanes';
import type { BatchItem } from '../src/import/capture-client';

const NOW = Date.UTC(2025, 0, 1);
const ctx = (over: Partial<ConvertContext> = {}): ConvertContext => ({
  format: 'posthog',
  token: 'phc_test',
  nowMs: NOW,
  maxEventBytes: 1_000_000,
  ...over,
});

describe('parseTimestamp', () => {
  it.each([
    ['2024-03-01T10:00:00Z', '2024-03-01T10:00:00.000Z'],
    ['2024-03-01T10:00:00.123+02:00', '2024-03-01T08:00:00.123Z'],
    ['2024-03-01 10:00:00.000000', '2024-03-01T10:00:00.000Z'], // Amplitude, zone-less is UTC
    ['2024-03-01', '2024-03-01T00:00:00.000Z'],
    [1700000000, '2023-11-14T22:13:20.000Z'], // epoch seconds
    [1700000000123, '2023-11-14T22:13:20.123Z'], // epoch milliseconds
    ['1700000000', '2023-11-14T22:13:20.000Z'],
  ])('%s', (input, iso) => {
    const r = parseTimestamp(input, NOW);
    expect(r.ok && new Date(r.ms).toISOString()).toBe(iso);
  });

  it.each([
    [undefined, 'missing'],
    ['yesterday', 'not ISO 8601'],
    ['2024-02-30T00:00:00Z', 'not a valid date'],
    ['2031-01-01T00:00:00Z', 'in the future'],
    [{}, 'must be a string or a number'],
  ])('refuses %p', (input, reason) => {
    const r = parseTimestamp(input, NOW);
    expect(r.ok ? null : r.reason).toContain(reason);
  });
});

describe('convertRecord', () => {
  it('PostHog: keeps a given uuid, derives a stable one otherwise, per project', () => {
    const given = convertRecord(
      {
        event: 'e',
        distinct_id: 1,
        timestamp: '2024-01-01T00:00:00Z',
        uuid: '0190B5A0-0000-7000-8000-000000000001',
      },
      'x',
      ctx(),
    );
    expect(given.ok && given.event).toMatchObject({
      distinct_id: '1',
      uuid: '0190b5a0-0000-7000-8000-000000000001',
    });
    const line = '{"event":"e","distinct_id":"u","timestamp":"2024-01-01T00:00:00Z"}';
    const a = convertRecord(JSON.parse(line), line, ctx());
    const b = convertRecord(JSON.parse(line), line, ctx());
    const other = convertRecord(JSON.parse(line), line, ctx({ token: 'phc_other' }));
    expect(a.ok && a.event.uuid).toMatch(/^[0-9a-f-]{8}-[0-9a-f]{4}-5/);
    expect(a.ok && a.event.uuid).toBe(b.ok && b.event.uuid);
    expect(a.ok && a.event.uuid).not.toBe(other.ok && other.event.uuid);
  });

  it('Mixpanel: properties.distinct_id and time, $insert_id decides the uuid', () => {
    const rec = {
      event: 'Played',
      properties: { distinct_id: 'd1', time: 1601412131, $insert_id: 'ins-1', song: 'x' },
    };
    const a = convertRecord(rec, 'line one', ctx({ format: 'mixpanel' }));
    const b = convertRecord(rec, 'other text, same insert id', ctx({ format: 'mixpanel' }));
    expect(a.ok && a.event).toMatchObject({
      event: 'Played',
      distinct_id: 'd1',
      timestamp: '2020-09-29T20:42:11.000Z',
      properties: { song: 'x', $insert_id: 'ins-1' },
    });
    expect(a.ok && a.event.uuid).toBe(b.ok && b.event.uuid);
  });

  it('Amplitude: event_type, user_id before device_id, user properties become $set', () => {
    const r = convertRecord(
      {
        event_type: 'Click',
        user_id: null,
        device_id: 'dev-1',
        event_time: '2024-05-01 12:00:00.000000',
        event_properties: { button: 'buy' },
        user_properties: { plan: 'pro' },
        insert_id: 'i1',
      },
      'x',
      ctx({ format: 'amplitude' }),
    );
    expect(r.ok && r.event).toMatchObject({
      event: 'Click',
      distinct_id: 'dev-1',
      timestamp: '2024-05-01T12:00:00.000Z',
      properties: { button: 'buy', $set: { plan: 'pro' }, $device_id: 'dev-1', $insert_id: 'i1' },
    });
  });

  it.each([
    [42, 'not a JSON object'],
    [{ distinct_id: 'u', timestamp: 1 }, 'event name'],
    [{ event: 'e', timestamp: 1 }, 'distinct_id'],
    [{ event: 'e', distinct_id: 'u' }, 'timestamp is missing'],
    [{ event: 'e', distinct_id: 'u', timestamp: 1, uuid: 'nope' }, 'uuid is not a UUID'],
    [{ event: 'e', distinct_id: 'u', timestamp: 1, properties: 'x' }, 'properties must be an object'],
  ])('rejects %p', (value, reason) => {
    const r = convertRecord(value, '', ctx());
    expect(r.ok ? null : r.reason).toContain(reason);
  });

  it('rejects an event capture would drop as too large (its Kafka record counted with overhead)', () => {
    const big = { event: 'e', distinct_id: 'u', timestamp: 1, properties: { blob: 'x'.repeat(999_700) } };
    const r = convertRecord(big, '', ctx());
    expect(r.ok ? null : r.reason).toMatch(/too large/);
    const fits = convertRecord({ ...big, properties: { blob: 'x'.repeat(990_000) } }, '', ctx());
    expect(fits.ok).toBe(true);
  });
});

describe('CSV', () => {
  it('quoted fields, doubled quotes and line breaks', () => {
    expect(parseCsvFields('a,"b, c","say ""hi""","x\ny",')).toEqual(['a', 'b, c', 'say "hi"', 'x\ny', '']);
    expect(typeof parseCsvFields('"open')).toBe('string');
  });

  it('maps the header to a PostHog event and refuses a header without the required columns', () => {
    const header = parseCsvHeader('event,distinct_id,timestamp,properties.plan,$set.email,__proto__');
    expect(Array.isArray(header)).toBe(true);
    const e = csvToEvent(header as string[], 'signup,u1,2024-01-01,pro,a@b.c,{"x":1}');
    expect(e).toEqual({
      event: 'signup',
      distinct_id: 'u1',
      timestamp: '2024-01-01',
      properties: { plan: 'pro', ['__proto__']: '{"x":1}' },
      $set: { email: 'a@b.c' },
    });
    expect(parseCsvHeader('event,timestamp')).toContain('distinct_id');
    expect(csvToEvent(header as string[], 'a,b')).toContain('2 fields');
  });
});

describe('send lanes', () => {
  it('keeps each distinct_id in file order with several requests in flight; the watermark never passes an unacknowledged batch', async () => {
    const seen = new Map<string, number[]>();
    let inFlight = 0;
    let maxInFlight = 0;
    const acked = new Set<number>();
    let watermarkOk = true;
    const lanes = createSendLanes({
      lanes: 4,
      batchBytes: 400,
      async send(items) {
        inFlight++;
        maxInFlight = Math.max(maxInFlight, inFlight);
        for (const i of items) {
          const { d, n } = JSON.parse(i.json) as { d: string; n: number };
          seen.set(d, [...(seen.get(d) ?? []), n]);
        }
        await new Promise((r) => setTimeout(r, Math.random() * 8));
        inFlight--;
        return { accepted: items.length, refused: [] };
      },
      onAcked(batch) {
        for (const i of batch.items) acked.add(i.seq);
        const w = lanes.watermark({ seq: next, line: next + 1, offset: 0 });
        for (let s = 0; s < w.seq; s++) if (!acked.has(s)) watermarkOk = false;
      },
    });
    let next = 0;
    for (let n = 0; n < 2000; n++) {
      const d = `user-${n % 13}`;
      const item: BatchItem = { seq: n, line: n + 1, json: JSON.stringify({ d, n }) };
      next = n;
      await lanes.add(item, { seq: n, line: n + 1, offset: 0 }, d);
      next = n + 1;
    }
    await lanes.flush();
    expect(maxInFlight).toBeGreaterThan(1);
    expect(watermarkOk).toBe(true);
    expect(acked.size).toBe(2000);
    for (const [, ns] of seen) expect(ns).toEqual([...ns].sort((a, b) => a - b));
  });
});
