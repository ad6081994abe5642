// Per-organization flag quota (docs/interface.md, "Flag evaluation"). Usage is counted in Redis per billing period;
// each process adds its requests to the shared counter in batches (INCRBY, about once a
// second, together with a membership test of the "limited organizations" set that billing
// tooling may fill), so the hot path costs no round trip. An organization's first request in a
// process goes to Redis at once, so a listed organization is limited from its first request.
// The quota itself (organizations.feature_flag_quota, null = unlimited) comes from Postgres.
import type { Pool } from 'pg';
import { billingPeriod, redisKeys, type Redis, createLocalCache } from '@sett/cache';

export interface QuotaStore {
  /** The organization's quota; null when unlimited. Cached. */
  quota(organizationId: string): Promise<number | null>;
  /** The cached quota (null: unlimited), or undefined when `quota` must look it up. */
  cached?(organizationId: string): number | null | undefined;
}

export function createQuotaStore(opts: { pool: Pool; ttlMs: number }): QuotaStore {
  const cache = createLocalCache<string, number | null>({ ttlMs: opts.ttlMs, maxEntries: 10_000 });
  async function load(organizationId: string): Promise<number | null> {
    const { rows } = await opts.pool.query<{ feature_flag_quota: number | null }>(
      'SELECT feature_flag_quota FROM organizations WHERE id = $1',
      [organizationId],
    );
    return rows[0]?.feature_flag_quota ?? null;
  }
  return {
    quota: (organizationId) => cache.getOrLoad(organizationId, () => load(organizationId)),
    cached: (organizationId) => cache.get(organizationId),
  };
}

export function usageKey(organizationId: string, now: Date): string {
  return redisKeys.flagUsage(organizationId, billingPeriod(now));
}

/** Usage counters outlive their month by a margin so billing can still read them. */
export const USAGE_TTL_SECONDS = 60 * 24 * 3600;

/** Limited when billing listed the organization, or when this request took usage past quota. */
export function isQuotaLimited(input: {
  listed: boolean;
  usage: number | null;
  quota: number | null;
}): boolean {
  if (input.listed) return true;
  return input.quota !== null && input.usage !== null && input.usage > input.quota;
}

export interface UsageCounter {
  /** Counts one request of the organization; resolves to whether it is over quota. */
  count(organizationId: string, quota: number | null, now: Date): Promise<boolean>;
  /** Sends pending counts to Redis and refreshes what is known of every organization. */
  flush(): Promise<void>;
  stop(): Promise<void>;
}

interface OrgUsage {
  period: string;
  /** The shared counter as of the last round trip (all processes). */
  base: number;
  /** Requests counted here since then. */
  pending: number;
  listed: boolean;
  /** False until one round trip succeeded: unknown usage never limits (fail open). */
  synced: boolean;
}

// billingPeriod formats a date per call; the answer only changes at a UTC month boundary.
let periodCache: { from: number; to: number; period: string } | undefined;
export function currentPeriod(now: Date): string {
  const t = now.getTime();
  if (periodCache && t >= periodCache.from && t < periodCache.to) return periodCache.period;
  const period = billingPeriod(now);
  const from = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1);
  const to = Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1);
  periodCache = { from, to, period };
  return period;
}

export function createUsageCounter(opts: {
  redis: Redis;
  /** Skip Redis while it is known to be down (and report failures). */
  redisUsable: () => boolean;
  redisFailed: (err: unknown) => void;
  flushIntervalMs: number;
}): UsageCounter {
  const orgs = new Map<string, OrgUsage>();

  // One round trip for a set of organizations: add their pending counts, read the listed set.
  async function sync(entries: Array<[string, OrgUsage]>): Promise<void> {
    const pipeline = opts.redis.pipeline();
    const sent = entries.map(([orgId, usage]) => {
      const key = redisKeys.flagUsage(orgId, usage.period);
      const delta = usage.pending;
      pipeline
        .incrby(key, delta)
        .expire(key, USAGE_TTL_SECONDS)
        .sismember(redisKeys.quotaLimitedFlags(), orgId);
      usage.pending -= delta;
      return { usage, delta };
    });
    try {
      const results = (await pipeline.exec()) ?? [];
      for (const [err] of results) if (err) throw err;
      sent.forEach(({ usage }, i) => {
        usage.base = Number(results[i * 3]![1]) - usage.pending;
        usage.listed = Number(results[i * 3 + 2]![1]) === 1;
        usage.synced = true;
      });
    } catch (err) {
      for (const { usage, delta } of sent) usage.pending += delta; // counted again next time
      opts.redisFailed(err);
    }
  }

  // A flush sends what was counted before it began. One asked for while another is in flight
  // waits for it and then sends the rest, so flush() and stop() never return with counts unsent
  // (the in-flight round trip took its deltas before the newer requests were counted).
  let flushing: Promise<void> | undefined;
  let following: Promise<void> | undefined;
  const flush = (): Promise<void> => {
    if (flushing) {
      const next = () => {
        following = undefined;
        return flushing ?? flush();
      };
      return (following ??= flushing.then(next, next));
    }
    const run = async () => {
      if (orgs.size > 0 && opts.redisUsable()) await sync([...orgs.entries()]);
    };
    // Cleared in a later turn, after the assignment: a run with nothing to send settles at once,
    // and clearing inside it came before the assignment, leaving a settled flush that every
    // later flush returned without sending.
    flushing = run().finally(() => {
      flushing = undefined;
    });
    return flushing;
  };
  const timer = setInterval(() => void flush(), opts.flushIntervalMs);
  timer.unref();

  return {
    async count(organizationId, quota, now) {
      const period = currentPeriod(now);
      let usage = orgs.get(organizationId);
      const fresh = !usage || usage.period !== period;
      if (!usage || fresh) {
        usage = { period, base: 0, pending: 0, listed: false, synced: false };
        orgs.set(organizationId, usage);
      }
      usage.pending++;
      if (fresh && opts.redisUsable()) await sync([[organizationId, usage]]);
      return isQuotaLimited({
        listed: usage.listed,
        usage: usage.synced ? usage.base + usage.pending : null,
        quota,
      });
    },
    flush,
    async stop() {
      clearInterval(timer);
      await flush();
    },
  };
}
