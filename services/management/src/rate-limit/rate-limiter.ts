// Management's rate limit, shared by every replica: token buckets held in Redis, one per
// personal API key and one per user, checked and debited together by one Lua script, so a
// request costs one Redis round trip and minting more keys does not buy more requests (the
// user's bucket is still empty). Each bucket holds a minute's budget and refills continuously,
// so a caller may burst a minute's worth and then sustain the per-minute rate. The clock is
// Redis' own (TIME), so replicas with skewed clocks agree.
//
// When Redis does not answer, the limit fails open: the request goes through, counted in
// management_rate_limit_unchecked_total and logged (at most every 10 s). Refusing every
// request because the limiter's store is down would turn a Redis outage into a management
// outage; /_ready still reports Redis as down, so the operator sees it.
import type { Redis } from '@sett/cache';
import { prom } from '@sett/http';
import type { Logger } from '@sett/logger';

/** Who a request counts against. `user` is absent for callers that are not users (project secret keys). */
export interface RateLimitSubject {
  /** The key's bucket name: a personal API key id, or `secret:<team id>` for a project secret key. */
  key: string;
  user?: number;
}

export interface RateLimitDecision {
  ok: boolean;
  /** Seconds until the request would be allowed (only when !ok), at least 1. */
  retryAfterSeconds: number;
  /** Which bucket refused (only when !ok): of two empty ones, the one that refills last. */
  limit?: 'key' | 'user';
}

export interface RateLimiter {
  take(subject: RateLimitSubject): Promise<RateLimitDecision>;
}

export interface RedisRateLimiterOptions {
  redis: Redis;
  perKeyPerMinute: number;
  perUserPerMinute: number;
  logger: Logger;
  registry: prom.Registry;
}

const WINDOW_MS = 60_000;
const WARN_EVERY_MS = 10_000;

// KEYS[i]: a bucket (hash: tokens, at). ARGV[i]: its capacity per window; ARGV[#KEYS + 1]: the
// window in ms. Takes one token from every bucket, or from none when any has less than one.
// Returns {1, 0, 0} or {0, ms until every bucket has a token, index of the emptiest bucket}.
// A bucket untouched for a whole window would be full again, so it simply expires.
const TAKE_SCRIPT = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local window = tonumber(ARGV[#KEYS + 1])
local levels = {}
local wait, worst = 0, 0
for i = 1, #KEYS do
  local capacity = tonumber(ARGV[i])
  local perMs = capacity / window
  local stored = redis.call('HMGET', KEYS[i], 'tokens', 'at')
  local tokens = tonumber(stored[1])
  if tokens == nil then
    tokens = capacity
  else
    local elapsed = now - (tonumber(stored[2]) or now)
    if elapsed > 0 then tokens = tokens + elapsed * perMs end
    if tokens > capacity then tokens = capacity end
  end
  levels[i] = tokens
  if tokens < 1 then
    local ms = math.ceil((1 - tokens) / perMs)
    if ms >= wait then wait, worst = ms, i end
  end
end
if wait > 0 then return {0, wait, worst} end
for i = 1, #KEYS do
  redis.call('HSET', KEYS[i], 'tokens', tostring(levels[i] - 1), 'at', tostring(now))
  redis.call('PEXPIRE', KEYS[i], window)
end
return {1, 0, 0}
`;

/**
 * Bucket names. The `{…}` hash tag puts a key's bucket and its user's bucket in one Redis
 * Cluster slot, so the script (which touches both) also runs on a cluster.
 */
export function bucketKeys(subject: RateLimitSubject): { key: string; user?: string } {
  if (subject.user === undefined) return { key: `sett:ratelimit:{${subject.key}}:key` };
  const tag = `{user:${subject.user}}`;
  return { key: `sett:ratelimit:${tag}:key:${subject.key}`, user: `sett:ratelimit:${tag}` };
}

type TakeCommand = (numKeys: number, ...args: (string | number)[]) => Promise<[number, number, number]>;

export function createRedisRateLimiter(opts: RedisRateLimiterOptions): RateLimiter {
  const { redis, logger } = opts;
  const command = 'settManagementRateLimit';
  // EVALSHA, falling back to EVAL once when the script is not cached (ioredis does both).
  redis.defineCommand(command, { lua: TAKE_SCRIPT });
  const take = (redis as unknown as Record<string, TakeCommand>)[command]!.bind(redis);

  const throttled =
    (opts.registry.getSingleMetric('management_throttled_requests_total') as prom.Counter | undefined) ??
    new prom.Counter({
      name: 'management_throttled_requests_total',
      help: 'Requests refused by the rate limit, by the bucket that was empty (key or user)',
      labelNames: ['limit'],
      registers: [opts.registry],
    });
  // Exported at 0 from the start, so increase() sees the first throttled request.
  for (const limit of ['key', 'user']) throttled.inc({ limit }, 0);
  const unchecked =
    (opts.registry.getSingleMetric('management_rate_limit_unchecked_total') as prom.Counter | undefined) ??
    new prom.Counter({
      name: 'management_rate_limit_unchecked_total',
      help: 'Requests let through without a rate limit check because Redis did not answer',
      registers: [opts.registry],
    });
  let lastWarning = 0;

  const failOpen = (reason: string): RateLimitDecision => {
    unchecked.inc();
    const now = Date.now();
    if (now - lastWarning >= WARN_EVERY_MS) {
      lastWarning = now;
      logger.warn('rate limit not checked: Redis is not answering; letting requests through', {
        reason,
      });
    }
    return { ok: true, retryAfterSeconds: 0 };
  };

  return {
    async take(subject) {
      // Not connected: do not wait out the command timeout on every request.
      if (redis.status !== 'ready') return failOpen(`redis ${redis.status}`);
      const buckets = bucketKeys(subject);
      const result = await (
        buckets.user === undefined
          ? take(1, buckets.key, opts.perKeyPerMinute, WINDOW_MS)
          : take(2, buckets.key, buckets.user, opts.perKeyPerMinute, opts.perUserPerMinute, WINDOW_MS)
      ).catch((err: Error) => err);
      if (result instanceof Error) return failOpen(result.message);
      const [allowed, waitMs, worst] = result;
      if (allowed === 1) return { ok: true, retryAfterSeconds: 0 };
      const limit = worst === 2 ? 'user' : 'key';
      throttled.inc({ limit });
      return { ok: false, retryAfterSeconds: Math.max(1, Math.ceil(waitMs / 1000)), limit };
    },
  };
}
