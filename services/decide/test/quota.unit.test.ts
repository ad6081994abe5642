import { billingPeriod, type Redis } from '@sett/cache';
import { createUsageCounter, currentPeriod, isQuotaLimited, usageKey } from '../src/quota/quota';

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

/**
 * A Redis whose pipelines answer only when the test releases them, keeping a running INCRBY
 * total per key, so a test can count while a round trip is in flight.
 */
function heldRedis() {
  const totals = new Map<string, number>();
  const held: Array<() => void> = [];
  const redis = {
    pipeline() {
      const ops: Array<() => [null, number]> = [];
      const p = {
        incrby(key: string, delta: number) {
          ops.push(() => {
            totals.set(key, (totals.get(key) ?? 0) + delta);
            return [null, totals.get(key)!];
          });
          return p;
        },
        expire() {
          ops.push(() => [null, 1]);
          return p;
        },
        sismember() {
          ops.push(() => [null, 0]);
          return p;
        },
        exec: () => new Promise((resolve) => held.push(() => resolve(ops.map((op) => op())))),
      };
      return p;
    },
  };
  /** Answers the oldest held round trip; fails when none comes within a few turns of the loop. */
  const release = async () => {
    for (let turns = 0; held.length === 0; turns++) {
      if (turns > 100) throw new Error('no round trip to Redis was made');
      await new Promise((r) => setImmediate(r));
    }
    held.shift()!();
  };
  return { redis: redis as unknown as Redis, totals, release, waiting: () => held.length };
}

/** A usage counter on `redis` whose periodic flush never comes during a test. */
const counterOn = (redis: Redis) =>
  createUsageCounter({
    redis,
    redisUsable: () => true,
    redisFailed: (err) => {
      throw err;
    },
    flushIntervalMs: 3_600_000,
  });

describe('usage counter', () => {
  const now = new Date('2024-05-10T00:00:00Z');
  const key = usageKey('org-1', now);

  it('sends the counts made while a flush was in flight when flush is asked for again', async () => {
    const r = heldRedis();
    const counter = counterOn(r.redis);
    // The first request of an organization goes to Redis at once.
    const first = counter.count('org-1', null, now);
    await r.release();
    await first;
    expect(r.totals.get(key)).toBe(1);

    // A flush (the periodic one, say) is in flight with nothing pending; two more requests
    // arrive, then the caller asks for a flush: it must not return before those two are sent.
    const inFlight = counter.flush();
    await counter.count('org-1', null, now);
    await counter.count('org-1', null, now);
    const asked = counter.flush();
    expect(counter.flush()).toBe(asked); // one follow-up however many ask meanwhile
    await r.release();
    await inFlight;
    await r.release();
    await asked;
    expect(r.totals.get(key)).toBe(3);

    // stop() likewise leaves nothing behind.
    const again = counter.flush();
    await counter.count('org-1', null, now);
    const stopped = counter.stop();
    await r.release();
    await again;
    await r.release();
    await stopped;
    expect(r.totals.get(key)).toBe(4);
    expect(r.waiting()).toBe(0);
  });

  it('keeps flushing after a flush that had nothing to send', async () => {
    // A process idle at start: the periodic flush finds no organization and must not leave a
    // settled flush behind that every later flush returns without sending.
    const r = heldRedis();
    const counter = counterOn(r.redis);
    await counter.flush();
    const first = counter.count('org-1', null, now);
    await r.release();
    await first;
    await counter.count('org-1', null, now);
    const flushed = counter.flush();
    await r.release();
    await flushed;
    expect(r.totals.get(key)).toBe(2);
  });
});
