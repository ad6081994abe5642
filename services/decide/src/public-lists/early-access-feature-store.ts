// A project's early access features as posthog-js's getEarlyAccessFeatures reads them: one
// Postgres query per project (every stage, with the linked flag's key and payloads), kept in
// process for a short TTL and dropped at once when the flags-changed channel names the project
// (management writes every early access feature change through its flag lock, which publishes
// there). Concurrent misses for one project share a single query.
import type { Pool } from 'pg';
import { TtlCache } from '../persons/ttl-cache';

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
  const cache = new TtlCache<PublicEarlyAccessFeature[]>(opts.ttlMs, opts.maxProjects ?? 10_000);
  const inflight = new Map<number, Promise<PublicEarlyAccessFeature[]>>();
  // Bumped by invalidate (one project) and clear (all): a load that started before either is
  // answered but not kept.
  const generation = new Map<number, number>();
  let epoch = 0;
  const stamp = (teamId: number) => `${epoch}:${generation.get(teamId) ?? 0}`;

  async function load(teamId: number): Promise<PublicEarlyAccessFeature[]> {
    const before = stamp(teamId);
    const { rows } = await opts.pool.query<Row>(
      `SELECT e.id::text AS id, e.name, e.description, e.stage, e.documentation_url,
              f.key AS flag_key, f.filters -> 'payloads' -> 'true' AS flag_payload
         FROM early_access_features e
         LEFT JOIN feature_flags f ON f.id = e.feature_flag_id
        WHERE e.team_id = $1
        ORDER BY e.created_at, e.id`,
      [teamId],
    );
    const features = rows.map(toPublic);
    if (stamp(teamId) === before) cache.set(String(teamId), features);
    return features;
  }

  return {
    async list(teamId, stages) {
      let features = cache.get(String(teamId));
      if (!features) {
        let pending = inflight.get(teamId);
        if (!pending) {
          pending = load(teamId).finally(() => inflight.delete(teamId));
          inflight.set(teamId, pending);
        }
        features = await pending;
      }
      return features.filter((f) => stages.has(f.stage));
    },
    invalidate(teamId) {
      generation.set(teamId, (generation.get(teamId) ?? 0) + 1);
      cache.delete(String(teamId));
    },
    clear() {
      epoch += 1;
      cache.clear();
    },
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
