import { isQuotaLimited, usageKey } from '../src/quota/quota';

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
});
