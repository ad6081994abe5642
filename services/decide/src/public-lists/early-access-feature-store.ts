// A project's early access features as posthog-js's getEarlyAccessFeatures reads them: one
// Postgres query per project (every stage, with the linked flag's key and payloads), kept in
// process for a short TTL and dropped at once when the flags-changed channel names the project
// (management writes every early access feature change through its flag lock, which publishes
// there). Concurrent misses for one project share a single query.
import { createLocalCache } from '@sett/cache';
import type { Pool } from 'pg';

/** One entry of `{"earlyAccessFeatures": [...]}`, PostHog's MinimalEarlyAccessFeatureSerializer. */
export interface PublicEarlyAccessFeature {
  id: string;
  name: string;
  description: string;
  stage: string;
  documentationUrl: string;
  flagKey: string | null;
  payload: unknown;
}

export interface EarlyAccessFeatureStore {
  /** The project's features in these stages, oldest first. Throws when Postgres cannot answer. */
  list(teamId: number, stages: ReadonlySet<string>): Promise<PublicEarlyAccessFeature[]>;
  invalidate(teamId: number): void;
  clear(): void;
}

interface Row {
  id: string;
  name: string;
  description: string;
  stage: string;
  documentation_url: string;
  flag_key: string | null;
  flag_payload: unknown;
}

export function createEarlyAccessFeatureStore(opts: {
  pool: Pool;
  ttlMs: number;
  maxProjects?: number;
}): EarlyAccessFeatureStore {
  // One project per entry; invalidate (one project) and clear (all) also keep a load that was
  // running out of the cache (createLocalCache).
  const cache = createLocalCache<number, PublicEarlyAccessFeature[]>({
    ttlMs: opts.ttlMs,
    maxEntries: opts.maxProjects ?? 10_000,
  });

  async function load(teamId: number): Promise<PublicEarlyAccessFeature[]> {
    const { rows } = await opts.pool.query<Row>(
      `SELECT e.id::text AS id, e.name, e.description, e.stage, e.documentation_url,
              f.key AS flag_key, f.filters -> 'payloads' -> 'true' AS flag_payload
         FROM early_access_features e
         LEFT JOIN feature_flags f ON f.id = e.feature_flag_id
        WHERE e.team_id = $1
        ORDER BY e.created_at, e.id`,
      [teamId],
    );
    return rows.map(toPublic);
  }

  return {
    async list(teamId, stages) {
      const features = await cache.getOrLoad(teamId, () => load(teamId));
      return features.filter((f) => stages.has(f.stage));
    },
    invalidate: (teamId) => cache.delete(teamId),
    clear: () => cache.clear(),
  };
}

function toPublic(row: Row): PublicEarlyAccessFeature {
  return {
    id: row.id,
    name: row.name,
    description: row.description,
    stage: row.stage,
    documentationUrl: row.documentation_url,
    flagKey: row.flag_key,
    payload: payloadValue(row.flag_payload),
  };
}

/**
 * Sett keeps no payload on the feature itself; the linked flag's "true" payload stands in for
 * it. Flag payloads are stored as JSON text: the parsed value is sent, as PostHog sends the
 * feature's payload object; nothing stored gives PostHog's default, {}.
 */
export function payloadValue(stored: unknown): unknown {
  if (stored === null || stored === undefined || stored === '') return {};
  if (typeof stored !== 'string') return stored;
  try {
    return JSON.parse(stored) as unknown;
  } catch {
    return stored;
  }
}
