// The monthly partition arithmetic: bounds are the lowest UUIDv7 of each month's first
// millisecond, so a v7 uuid of any moment in the month sorts inside [from, to).
import { randomUUID } from 'node:crypto';
import {
  monthPartition,
  partitionMonth,
  partitionsAhead,
  retentionCutoff,
  uuid7Floor,
  uuid7Time,
  uuidv7At,
} from '../src/retention/partition-plan';

describe('partition plan', () => {
  it('puts every v7 uuid of a month between that month bounds', () => {
    const p = monthPartition(new Date('2026-02-14T10:00:00Z'));
    expect(p.name).toBe('events_p2026_02');
    expect(p.from.toISOString()).toBe('2026-02-01T00:00:00.000Z');
    expect(p.to.toISOString()).toBe('2026-03-01T00:00:00.000Z');
    for (const at of ['2026-02-01T00:00:00.000Z', '2026-02-15T12:00:00Z', '2026-02-28T23:59:59.999Z']) {
      const u = uuidv7At(new Date(at).getTime());
      expect(u >= p.fromUuid && u < p.toUuid).toBe(true);
    }
    const march = uuidv7At(new Date('2026-03-01T00:00:00.000Z').getTime());
    expect(march >= p.toUuid).toBe(true);
  });

  it('reads the time back out of a v7 uuid and refuses other versions', () => {
    const ms = Date.UTC(2026, 10, 22, 17, 0, 0, 123);
    expect(uuid7Time(uuidv7At(ms))).toBe(ms);
    expect(uuid7Time(randomUUID())).toBeNull();
    expect(uuid7Floor(new Date(ms))).toBe(
      `${ms.toString(16).padStart(12, '0').slice(0, 8)}-${ms.toString(16).padStart(12, '0').slice(8)}-0000-0000-000000000000`,
    );
  });

  it('plans this month and the next ones, across a year end', () => {
    const names = partitionsAhead(new Date('2026-11-22T00:00:00Z'), 3).map((p) => p.name);
    expect(names).toEqual(['events_p2026_11', 'events_p2026_12', 'events_p2027_01', 'events_p2027_02']);
  });

  it('parses partition names, and nothing else', () => {
    expect(partitionMonth('events_p2026_12')?.toISOString()).toBe('2026-12-01T00:00:00.000Z');
    expect(partitionMonth('events_default')).toBeNull();
    expect(partitionMonth('events_p2026_13')).toBeNull();
  });

  it('computes the retention cutoff in days', () => {
    expect(retentionCutoff(new Date('2026-11-22T00:00:00Z'), 30).toISOString()).toBe(
      '2026-10-23T00:00:00.000Z',
    );
  });
});
