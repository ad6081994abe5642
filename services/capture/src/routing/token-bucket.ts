// Per-key token buckets for spike detection (PostHog's capture overflow): each key refills at
// `ratePerSecond` up to `burst`; an event that finds its bucket empty is over the limit and is
// sent to the overflow topic instead. Pure: time comes from the caller.
export type KeyLimiterOptions = {
  ratePerSecond: number;
  burst: number;
  /** Keys tracked at most; the least recently inserted is forgotten first (it restarts full). */
  maxKeys?: number;
  now?: () => number;
};

export type KeyLimiter = {
  /** Takes one token for `key`; false when the key is over its limit. */
  take(key: string): boolean;
  size(): number;
};

type Bucket = { tokens: number; updatedAt: number };

export function createKeyLimiter(opts: KeyLimiterOptions): KeyLimiter {
  const maxKeys = opts.maxKeys ?? 1_000_000;
  const now = opts.now ?? Date.now;
  const buckets = new Map<string, Bucket>();

  return {
    take(key) {
      const t = now();
      let bucket = buckets.get(key);
      if (!bucket) {
        if (buckets.size >= maxKeys) {
          const oldest = buckets.keys().next().value;
          if (oldest !== undefined) buckets.delete(oldest);
        }
        bucket = { tokens: opts.burst, updatedAt: t };
        buckets.set(key, bucket);
      } else if (t > bucket.updatedAt) {
        bucket.tokens = Math.min(
          opts.burst,
          bucket.tokens + ((t - bucket.updatedAt) / 1000) * opts.ratePerSecond,
        );
        bucket.updatedAt = t;
      }
      if (bucket.tokens < 1) return false;
      bucket.tokens -= 1;
      return true;
    },
    size: () => buckets.size,
  };
}
