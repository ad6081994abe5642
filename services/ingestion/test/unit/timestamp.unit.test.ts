import { normalizeTimestamp } from '../../src/pipeline/timestamp';

const NOW = '2024-05-01T12:00:00.000Z';
const clock = () => Date.parse('2030-01-01T00:00:00.000Z');

describe('normalizeTimestamp', () => {
  it('corrects client clock skew: now - (sent_at - timestamp)', () => {
    // Client clock 1 hour ahead: it says it sent at 13:00 an event from 12:59:50.
    const r = normalizeTimestamp({
      timestamp: '2024-05-01T12:59:50.000Z',
      sentAt: '2024-05-01T13:00:00.000Z',
      now: NOW,
      historical: false,
    });
    expect(r.timestamp.toISOString()).toBe('2024-05-01T11:59:50.000Z');
    expect(r.warnings).toEqual([]);
  });

  it('keeps the given timestamp without sent_at, and for historical migrations', () => {
    expect(
      normalizeTimestamp({
        timestamp: '2024-04-01T00:00:00Z',
        sentAt: null,
        now: NOW,
        historical: false,
      }).timestamp.toISOString(),
    ).toBe('2024-04-01T00:00:00.000Z');
    const h = normalizeTimestamp({
      timestamp: '2020-01-01T00:00:00Z',
      sentAt: '2024-05-01T13:00:00Z',
      now: NOW,
      historical: true,
    });
    expect(h.timestamp.toISOString()).toBe('2020-01-01T00:00:00.000Z');
  });

  it('honours $ignore_sent_at', () => {
    const r = normalizeTimestamp({
      timestamp: '2024-04-01T00:00:00Z',
      sentAt: '2024-05-01T13:00:00Z',
      now: NOW,
      historical: false,
      ignoreSentAt: true,
    });
    expect(r.timestamp.toISOString()).toBe('2024-04-01T00:00:00.000Z');
  });

  it('uses the receive time with a warning when the timestamp is missing or invalid', () => {
    expect(normalizeTimestamp({ timestamp: null, sentAt: null, now: NOW, historical: false })).toEqual({
      timestamp: new Date(NOW),
      warnings: ['timestamp_missing'],
    });
    expect(
      normalizeTimestamp({ timestamp: 'yesterday-ish', sentAt: null, now: NOW, historical: false }),
    ).toEqual({
      timestamp: new Date(NOW),
      warnings: ['timestamp_invalid'],
    });
    // Out of the range Postgres prints with four-digit years.
    expect(
      normalizeTimestamp({ timestamp: '+020000-01-01T00:00:00Z', sentAt: null, now: NOW, historical: false })
        .warnings,
    ).toEqual(['timestamp_invalid']);
  });

  it('ignores an unparseable sent_at (warning) and refuses timestamps more than 23h ahead', () => {
    const bad = normalizeTimestamp({
      timestamp: '2024-05-01T11:00:00Z',
      sentAt: 'nope',
      now: NOW,
      historical: false,
    });
    expect(bad.timestamp.toISOString()).toBe('2024-05-01T11:00:00.000Z');
    expect(bad.warnings).toEqual(['sent_at_invalid']);
    const future = normalizeTimestamp({
      timestamp: '2024-05-03T12:00:00Z',
      sentAt: null,
      now: NOW,
      historical: false,
    });
    expect(future).toEqual({ timestamp: new Date(NOW), warnings: ['timestamp_in_future'] });
  });

  it('falls back to the local clock when now is unusable', () => {
    const r = normalizeTimestamp({ timestamp: null, sentAt: null, now: 'garbage', historical: false }, clock);
    expect(r.timestamp.toISOString()).toBe('2030-01-01T00:00:00.000Z');
    expect(r.warnings).toEqual(['now_invalid', 'timestamp_missing']);
  });
});
