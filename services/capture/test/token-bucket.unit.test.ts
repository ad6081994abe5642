import { createKeyLimiter } from '../src/routing/token-bucket';

describe('createKeyLimiter', () => {
  it('allows the burst, then refuses until tokens refill at the rate', () => {
    let t = 0;
    const limiter = createKeyLimiter({ ratePerSecond: 10, burst: 3, now: () => t });
    expect([1, 2, 3, 4].map(() => limiter.take('a'))).toEqual([true, true, true, false]);
    t += 100; // one token back
    expect(limiter.take('a')).toBe(true);
    expect(limiter.take('a')).toBe(false);
    t += 10_000; // refills only up to the burst
    expect([1, 2, 3, 4].map(() => limiter.take('a'))).toEqual([true, true, true, false]);
  });

  it('keeps keys independent', () => {
    const limiter = createKeyLimiter({ ratePerSecond: 0, burst: 1, now: () => 0 });
    expect(limiter.take('a')).toBe(true);
    expect(limiter.take('a')).toBe(false);
    expect(limiter.take('b')).toBe(true);
  });

  it('forgets the oldest key beyond maxKeys', () => {
    const limiter = createKeyLimiter({ ratePerSecond: 0, burst: 1, maxKeys: 2, now: () => 0 });
    limiter.take('a');
    limiter.take('b');
    limiter.take('c');
    expect(limiter.size()).toBe(2);
    expect(limiter.take('a')).toBe(true); // forgotten, starts full again
  });
});
