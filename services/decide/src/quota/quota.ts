// Per-organization flag quota (spec 7 rule 4). Usage is counted in Redis per billing period
// with INCR, queued by the caller into its one per-request pipeline together with a membership
// test of the "limited organizations" set that billing tooling may fill by hand. The quota
// itself (organizations.feature_flag_quota, null = unlimited) is read from Postgres and cached.
import type { Pool } from 'pg';
import { billingPeriod, redisKeys } from '@sett/cache';
import { TtlCache } from '../persons/ttl-cache';

export interface QuotaStore {
  /** The organization's quota; null when unlimited. Cached. */
  quota(organizationId: string): Promise<number | null>;
}

export function createQuotaStore(opts: { pool: Pool; ttlMs: number }): QuotaStore {
  const cache = new TtlCache<number | null>(opts.ttlMs, 10_000);
  const inflight = new Map<string, Promise<number | null>>();
  async function load(organizationId: string): Promise<number | null> {
    const { rows } = await opts.pool.query<{ feature_flag_quota: number | null }>(
      'SELECT feature_flag_quota FROM organizations WHERE id = $1',
      [organizationId],
    );
    const quota = rows[0]?.feature_flag_quota ?? null;
    cache.set(organizationId, quota);
    return quota;
  }
  return {
    async quota(organizationId) {
      const hit = cache.get(organizationId);
      if (hit !== undefined) return hit;
      let p = inflight.get(organizationId);
      if (!p) {
        p = load(organizationId).finally(() => inflight.delete(organizationId));
        inflight.set(organizationId, p);
      }
      return p;
    },
  };
}

export function usageKey(organizationId: string, now: Date): string {
  return redisKeys.flagUsage(organizationId, billingPeriod(now));
}

/** Usage counters outlive their month by a margin so billing can still read them. */
export const USAGE_TTL_SECONDS = 60 * 24 * 3600;

/** Limited when billing listed the organization, or when this request took usage past quota. */
export function isQuotaLimited(input: { listed: boolean; usage: number | null; quota: number | null }): boolean {
  if (input.listed) return true;
  return input.quota !== null && input.usage !== null && input.usage > input.quota;
}
