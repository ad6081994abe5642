import { billingPeriod } from '@sett/cache';
import { currentPeriod, isQuotaLimited, usageKey } from '../src/quota/quota';

describe('quota', () => {
  it('limits listed organizations and usage past the quota', () => {
    expect(isQuotaLimited({ listed: true, usage: 1, quota: null })).toBe(true);
    expect(isQuotaLimited({ listed: false, usage: 10, quota: 10 })).toBe(false);
    expect(isQuotaLimited({ listed: false, usage: 11, quota: 10 })).toBe(true);
    expect(isQuotaLimited({ listed: false, usage: 1_000_000, quota: null })).toBe(false);
    // Redis down: no usage known, not limited (fail open)
    expect(isQuotaLimited({ listed: false, usage: null, quota: 0 })).toBe(false);
  });

  it('counts usage per billing month', () => {
    expect(usageKey('org-1', new Date('2024-03-31T23:59:59Z'))).toBe(
      'sett:usage:feature_flags:org-1:2024-03',
    );
  });

  it('caches the billing period without ever answering another month', () => {
    const instants = [
      '2024-01-31T23:59:59.999Z',
      '2024-02-01T00:00:00.000Z',
      '2024-02-15T12:00:00.000Z',
      '2024-02-29T23:59:59.999Z',
      '2024-03-01T00:00:00.000Z',
      '2024-02-10T00:00:00.000Z', // back in time: still right
      '2023-12-31T23:59:59.999Z',
      '2024-01-01T00:00:00.000Z',
    ];
    for (const at of instants) {
      for (let i = 0; i < 2; i++) expect(currentPeriod(new Date(at))).toBe(billingPeriod(new Date(at)));
    }
  });
});
