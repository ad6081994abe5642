// The project settings ingestion applies to each event (anonymize_ips, geoip_enabled) and the
// ingested_event flag, cached in process per team: one Postgres read per batch for the teams not
// cached or expired (never one per event), one UPDATE per batch for teams whose first stored
// event this is. A settings change reaches ingestion within the cache TTL (TOKEN_CACHE_TTL_MS,
// like a token change).
import type { Pool } from 'pg';
import { createLocalCache } from '@sett/cache';

export type TeamSettings = {
  anonymizeIps: boolean;
  geoipEnabled: boolean;
  ingestedEvent: boolean;
};

export type TeamSettingsStore = {
  /** Settings of every given team; teams that no longer exist are left out. */
  load(teamIds: number[]): Promise<Map<number, TeamSettings>>;
  /** Sets ingested_event for the teams not yet known to have it (one UPDATE, or none). */
  markIngested(teamIds: Iterable<number>): Promise<void>;
};

export function createTeamSettingsStore(opts: {
  pool: Pool;
  ttlMs?: number;
  maxEntries?: number;
}): TeamSettingsStore {
  const cache = createLocalCache<number, TeamSettings>({
    ttlMs: opts.ttlMs ?? 30_000,
    maxEntries: opts.maxEntries ?? 100_000,
  });
  return {
    async load(teamIds) {
      const out = new Map<number, TeamSettings>();
      const missing: number[] = [];
      for (const id of teamIds) {
        const hit = cache.get(id);
        if (hit) out.set(id, hit);
        else missing.push(id);
      }
      if (missing.length === 0) return out;
      const { rows } = await opts.pool.query<{
        id: number;
        anonymize_ips: boolean;
        geoip_enabled: boolean;
        ingested_event: boolean;
      }>('SELECT id, anonymize_ips, geoip_enabled, ingested_event FROM teams WHERE id = ANY($1::int[])', [
        missing,
      ]);
      for (const r of rows) {
        const settings = {
          anonymizeIps: r.anonymize_ips,
          geoipEnabled: r.geoip_enabled,
          ingestedEvent: r.ingested_event,
        };
        cache.set(r.id, settings);
        out.set(r.id, settings);
      }
      return out;
    },
    async markIngested(teamIds) {
      const unmarked = [...new Set(teamIds)].filter((id) => cache.get(id)?.ingestedEvent !== true);
      if (unmarked.length === 0) return;
      await opts.pool.query(
        'UPDATE teams SET ingested_event = true WHERE id = ANY($1::int[]) AND NOT ingested_event',
        [unmarked],
      );
      for (const id of unmarked) {
        const hit = cache.get(id);
        if (hit) cache.set(id, { ...hit, ingestedEvent: true });
      }
    },
  };
}
