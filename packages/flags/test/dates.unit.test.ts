// Relative date arithmetic, which PostHog performs calendar-aware for months and years.
import { parseRelativeDate } from '../src';

const at = (iso: string): Date => new Date(iso);
const rel = (value: string, now: string): string | undefined =>
  parseRelativeDate(value, at(now))?.toISOString();

describe('parseRelativeDate', () => {
  const now = '2020-01-01T12:01:20.134Z';

  it('subtracts hours, days and weeks as fixed durations', () => {
    expect(rel('-1h', now)).toBe('2020-01-01T11:01:20.134Z');
    expect(rel('30h', now)).toBe('2019-12-31T06:01:20.134Z');
    expect(rel('-7d', now)).toBe('2019-12-25T12:01:20.134Z');
    expect(rel('-1w', now)).toBe(rel('-7d', now));
    expect(rel('-8w', now)).toBe('2019-11-06T12:01:20.134Z');
  });

  it('steps months and years back on the calendar, keeping the time of day', () => {
    expect(rel('-1m', now)).toBe('2019-12-01T12:01:20.134Z');
    expect(rel('-12m', now)).toBe(rel('-1y', now));
    expect(rel('-1y', now)).toBe('2019-01-01T12:01:20.134Z');
    // Clamped one month at a time: Mar 31 -> Feb 29 -> Jan 29.
    expect(rel('-1m', '2024-03-31T00:00:00.000Z')).toBe('2024-02-29T00:00:00.000Z');
    expect(rel('-2m', '2024-03-31T00:00:00.000Z')).toBe('2024-01-29T00:00:00.000Z');
    expect(rel('-1y', '2024-02-29T00:00:00.000Z')).toBe('2023-02-28T00:00:00.000Z');
  });

  it('ignores the sign and rejects other shapes and counts from 10000 on', () => {
    expect(rel('3d', now)).toBe(rel('-3d', now));
    expect(rel('000h', now)).toBe(now);
    for (const bad of ['1', '1x', '1.2y', '1s', 'bazinga', '+3d', '-3D', '10000d', '1000000h']) {
      expect(rel(bad, now)).toBeUndefined();
    }
    expect(rel('9999d', now)).toBeDefined();
  });
});
