// Date ranges of the query kinds: closed-form arithmetic whatever the range's length, years
// 0001-9999 as they are (no century shift, no text comparison), and the period before a range.
import { ValidationError } from '@sett/http';
import {
  bucketCount,
  localOf,
  previousRange,
  resolveRange,
  shift,
  wallMs,
  type Local,
} from '../src/time-range';

const at = (y: number, mo: number, d: number, h = 0): Local => ({ y, mo, d, h, mi: 0, s: 0 });
const NOW = new Date('2026-11-27T15:30:00Z');

test('shifts by n units at once, months clamped to the month, years below 100 kept', () => {
  expect(shift(at(2026, 3, 31), 'm', -1)).toEqual(at(2026, 2, 28));
  expect(shift(at(2024, 2, 29), 'y', 1)).toEqual(at(2025, 2, 28));
  expect(shift(at(50, 1, 1), 'd', 1)).toEqual(at(50, 1, 2));
  expect(shift(at(2026, 11, 1, 5), 'h', -3691)).toEqual(
    shift(shift(at(2026, 11, 1, 5), 'h', -3690), 'h', -1),
  );
  expect(wallMs(at(99, 12, 31))).toBeLessThan(wallMs(at(100, 1, 1)));
});

test('counts buckets without walking them', () => {
  expect(bucketCount(at(2026, 1, 1), at(2026, 12, 31), 'day')).toBe(365);
  expect(bucketCount(at(2026, 1, 15), at(2026, 3, 2), 'month')).toBe(3);
  expect(bucketCount(at(9999, 12, 1), at(9999, 12, 31, 23), 'day')).toBe(31);
});

test('the previous period of an hourly range of 3,691 buckets is as long and just before', () => {
  const range = resolveRange({ date_from: '-3690h' }, 'hour', 'UTC', NOW);
  expect(range.buckets).toHaveLength(3691);
  const previous = previousRange(range, 'hour');
  expect(previous.buckets).toHaveLength(3691);
  expect(wallMs(previous.buckets[3690]!) + 3_600_000).toBe(wallMs(range.buckets[0]!));
});

test.each([
  [{ date_from: '-2090y' }, 'dateRange.date_from'],
  [{ date_from: '0000-01-01', date_to: '0000-01-02' }, 'dateRange.date_from'],
  [{ date_from: '2026-02-29' }, 'dateRange.date_from'],
  [{ date_from: '2000-01-01', date_to: '2026-01-01' }, 'interval'],
])('refuses %j naming %s', (dateRange, attr) => {
  const interval = 'date_to' in dateRange && dateRange.date_from === '2000-01-01' ? 'hour' : 'day';
  expect(() => resolveRange(dateRange, interval, 'UTC', NOW)).toThrow(ValidationError);
  try {
    resolveRange(dateRange, interval, 'UTC', NOW);
  } catch (err) {
    expect((err as ValidationError).attr).toBe(attr);
  }
});

test('answers the years 0050 and 9999 as they are', () => {
  const early = resolveRange({ date_from: '0050-01-01', date_to: '0050-01-03' }, 'day', 'UTC', NOW);
  expect(early.buckets.map((b) => b.y)).toEqual([50, 50, 50]);
  const late = resolveRange({ date_from: '9999-12-01', date_to: '9999-12-31' }, 'day', 'UTC', NOW);
  expect(late.buckets).toHaveLength(31);
  expect(localOf(new Date('0050-06-01T12:00:00Z'), 'UTC').y).toBe(50);
});
