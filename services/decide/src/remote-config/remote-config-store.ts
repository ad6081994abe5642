// Where decide gets a project's remote config document: an in-process copy (short TTL, dropped
// at once when the remote-config-changed channel names the project), else one Redis GET, else
// one Postgres query (the team row and whether it has a live flag), written back to Redis with a
// TTL and NX. The serialised JSON and script are made once per copy, so a steady-state request
// costs a map lookup. Management deletes the Redis document on every settings and flag write
// (@sett/cache writers); a rebuild racing such a write can keep an old document for at most
// the write-back TTL.
import type { Pool } from 'pg';
import { createGenerations, createLocalCache, redisKeys, type Redis } from '@sett/cache';
import type { Logger } from '@sett/logger';
import type { RedisHealth } from '../decide/decide-service';
import {
  buildRemoteConfig,
  decodeRemoteConfig,
  remoteConfigScript,
  type RemoteConfig,
} from './remote-config-builder';

export interface RemoteConfigEntry {
  config: RemoteConfig;
  /** The document as served by `/array/<token>/config`. */
  json: Buffer;
  /** The `config.js` script. */
  js: Buffer;
}

export type RemoteConfigSource = 'local' | 'redis' | 'postgres';

export interface RemoteConfigStore {
  /** The project's document; undefined when the team no longer exists. Throws when neither Redis nor Postgres can answer. */
  get(teamId: number, token: string): Promise<RemoteConfigEntry | undefined>;
  invalidate(teamId: number): void;
  clear(): void;
}

export interface RemoteConfigStoreOptions {
  redis: Redis;
  pool: Pool;
  logger: Logger;
  redisHealth: RedisHealth;
  ttlMs: number;
  /** Redis TTL of documents decide writes back. */
  writeBackTtlSeconds?: number;
  maxEntries?: number;
  onSource?: (source: RemoteConfigSource) => void;
  now?: () => number;
}

export const REMOTE_CONFIG_WRITE_BACK_TTL_SECONDS = 300;

const TEAM_SETTINGS_SQL = `
  SELECT t.api_token, t.autocapture_opt_out, t.autocapture_exceptions_opt_in, t.heatmaps_opt_in,
         t.capture_performance_opt_in, t.autocapture_web_vitals_opt_in,
         t.autocapture_web_vitals_allowed_metrics, t.capture_dead_clicks, t.session_recording_opt_in,
         t.surveys_opt_in,
         EXISTS (SELECT 1 FROM feature_flags f
                  WHERE f.team_id = t.id AND f.active AND NOT f.deleted
                    AND NOT f.is_remote_configuration) AS has_feature_flags
    FROM teams t WHERE t.id = $1`;

interface TeamSettingsRow {
  api_token: string;
  autocapture_opt_out: boolean;
  autocapture_exceptions_opt_in: boolean;
  heatmaps_opt_in: boolean;
  capture_performance_opt_in: boolean;
  autocapture_web_vitals_opt_in: boolean;
  autocapture_web_vitals_allowed_metrics: unknown;
  capture_dead_clicks: boolean;
  session_recording_opt_in: boolean;
  surveys_opt_in: boolean;
  has_feature_flags: boolean;
}

export function remoteConfigEntry(config: RemoteConfig): RemoteConfigEntry {
  return { config, json: Buffer.from(JSON.stringify(config)), js: Buffer.from(remoteConfigScript(config)) };
}

export function createRemoteConfigStore(opts: RemoteConfigStoreOptions): RemoteConfigStore {
  const local = createLocalCache<string, RemoteConfigEntry>({
    ttlMs: opts.ttlMs,
    maxEntries: opts.maxEntries ?? 10_000,
    now: opts.now,
  });
  // Bumped by invalidate and clear: a load that started before either must not be remembered.
  const generations = createGenerations<number>();
  const inflight = new Map<number, Promise<RemoteConfigEntry | undefined>>();
  const writeBackTtl = opts.writeBackTtlSeconds ?? REMOTE_CONFIG_WRITE_BACK_TTL_SECONDS;

  async function load(teamId: number): Promise<RemoteConfigEntry | undefined> {
    const started = generations.stamp(teamId);
    let redisOk = opts.redisHealth.usable();
    if (redisOk) {
      try {
        const config = decodeRemoteConfig(await opts.redis.get(redisKeys.remoteConfig(teamId)));
        if (config) {
          opts.onSource?.('redis');
          return remember(teamId, started, remoteConfigEntry(config));
        }
      } catch (err) {
        redisOk = false;
        opts.redisHealth.failed(err);
      }
    }
    const { rows } = await opts.pool.query(TEAM_SETTINGS_SQL, [teamId]);
    const row = rows[0] as TeamSettingsRow | undefined;
    opts.onSource?.('postgres');
    if (!row) return undefined;
    const config = buildRemoteConfig({
      token: row.api_token,
      autocaptureOptOut: row.autocapture_opt_out,
      autocaptureExceptionsOptIn: row.autocapture_exceptions_opt_in,
      heatmapsOptIn: row.heatmaps_opt_in,
      capturePerformanceOptIn: row.capture_performance_opt_in,
      autocaptureWebVitalsOptIn: row.autocapture_web_vitals_opt_in,
      autocaptureWebVitalsAllowedMetrics: row.autocapture_web_vitals_allowed_metrics,
      captureDeadClicks: row.capture_dead_clicks,
      sessionRecordingOptIn: row.session_recording_opt_in,
      surveysOptIn: row.surveys_opt_in,
      hasFeatureFlags: row.has_feature_flags,
    });
    const entry = remoteConfigEntry(config);
    // Only when nothing invalidated the project meanwhile: the rows read may predate that write.
    if (redisOk && generations.current(teamId, started)) {
      await opts.redis
        .set(redisKeys.remoteConfig(teamId), entry.json, 'EX', writeBackTtl, 'NX')
        .catch((err: Error) =>
          opts.logger.warn('could not write remote config back to redis', { teamId, err: err.message }),
        );
    }
    return remember(teamId, started, entry);
  }

  // Concurrent misses for one project share one load instead of stampeding Redis and Postgres.
  function shared(teamId: number): Promise<RemoteConfigEntry | undefined> {
    let p = inflight.get(teamId);
    if (!p) {
      p = load(teamId).finally(() => inflight.delete(teamId));
      inflight.set(teamId, p);
    }
    return p;
  }

  function remember(teamId: number, started: string, entry: RemoteConfigEntry): RemoteConfigEntry {
    if (generations.current(teamId, started)) local.set(String(teamId), entry);
    return entry;
  }

  return {
    async get(teamId, token) {
      const hit = local.get(String(teamId));
      if (hit && hit.config.token === token) {
        opts.onSource?.('local');
        return hit;
      }
      const entry = await shared(teamId);
      if (!entry || entry.config.token === token) return entry;
      // A document of the project's previous token: stale, rebuild it once from Postgres.
      this.invalidate(teamId);
      await opts.redis.del(redisKeys.remoteConfig(teamId)).catch(() => undefined);
      return shared(teamId);
    },
    invalidate(teamId) {
      local.delete(String(teamId));
      generations.bump(teamId);
    },
    clear() {
      generations.bumpAll();
      local.clear();
    },
  };
}
