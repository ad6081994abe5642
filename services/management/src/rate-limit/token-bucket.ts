// Per-key rate limiting: an in-process token bucket per personal API key. Capacity and refill
// come from `management.rateLimitPerMinute`, so a key may burst a minute's worth and then
// sustain the per-minute rate. In process (not Redis) on purpose: no extra round trip per
// request; with N management replicas a key gets up to N times the limit (documented).
export interface TokenBucketOptions {
  perMinute: number;
  now?: () => number;
  /** Buckets idle this long are forgotten (they would be full anyway). */
  idleMs?: number;
}

interface Bucket {
  tokens: number;
  updatedAt: number;
}

export interface TakeResult {
  ok: boolean;
  /** Seconds until one token is available again (only when !ok), at least 1. */
  retryAfterSeconds: number;
}

export class TokenBucketLimiter {
  private readonly buckets = new Map<string, Bucket>();
  private readonly capacity: number;
  private readonly perMs: number;
  private readonly now: () => number;
  private readonly idleMs: number;
  private lastSweep = 0;

  constructor(opts: TokenBucketOptions) {
    this.capacity = opts.perMinute;
    this.perMs = opts.perMinute / 60_000;
    this.now = opts.now ?? Date.now;
    this.idleMs = opts.idleMs ?? 120_000;
  }

  take(key: string): TakeResult {
    const now = this.now();
    this.sweep(now);
    const bucket = this.buckets.get(key) ?? { tokens: this.capacity, updatedAt: now };
    bucket.tokens = Math.min(this.capacity, bucket.tokens + (now - bucket.updatedAt) * this.perMs);
    bucket.updatedAt = now;
    this.buckets.set(key, bucket);
    if (bucket.tokens >= 1) {
      bucket.tokens -= 1;
      return { ok: true, retryAfterSeconds: 0 };
    }
    const waitMs = (1 - bucket.tokens) / this.perMs;
    return { ok: false, retryAfterSeconds: Math.max(1, Math.ceil(waitMs / 1000)) };
  }

  get size(): number {
    return this.buckets.size;
  }

  private sweep(now: number) {
    if (now - this.lastSweep < this.idleMs) return;
    this.lastSweep = now;
    for (const [key, b] of this.buckets) if (now - b.updatedAt > this.idleMs) this.buckets.delete(key);
  }
}
