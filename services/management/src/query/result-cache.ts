// The result cache of /query/, in Redis, shared by every management replica. An answer is
// stored with the project's data version at the moment it started computing (ingestion bumps
// that version once per batch it stores for the project, @sett/cache bumpQueryDataVersions); it
// is served by `blocking` only while that version is still current, so no answer older than the
// project's last ingested batch is ever served as fresh. The key hashes the project, its time
// zone, the query as checked (unwrapped), the test account filters when the query applies them,
// and the quarter hour: relative dates move with the clock, so an answer lives at most to the
// end of its quarter hour (and 15 minutes in Redis).
import { createHash } from 'node:crypto';
import { redisKeys, type Redis } from '@sett/cache';
import type { Logger } from '@sett/logger';

const TTL_SECONDS = 900;
const QUARTER_HOUR_MS = 900_000;
/** Answers larger than this are not kept (a 50,000-number answer is about 2.5 MB). */
const MAX_CACHED_BYTES = 4 * 1024 * 1024;

export interface CachedAnswer {
  answer: Record<string, unknown>;
  lastRefresh: string;
  /** Computed at the project's current data version. */
  fresh: boolean;
}

export interface ResultCache {
  key(teamId: number, parts: Record<string, unknown>, now: Date): string;
  /** The stored answer, or undefined; undefined too when Redis does not answer. */
  get(teamId: number, key: string): Promise<CachedAnswer | undefined>;
  /** The project's data version now (before computing). */
  version(teamId: number): Promise<string | undefined>;
  set(
    teamId: number,
    key: string,
    version: string,
    answer: Record<string, unknown>,
    lastRefresh: string,
  ): Promise<void>;
}

export function createResultCache(redis: Redis, logger: Logger): ResultCache {
  let warnedAt = 0;
  const warn = (err: Error) => {
    if (Date.now() - warnedAt < 10_000) return;
    warnedAt = Date.now();
    logger.warn('query result cache unavailable: computing without it', { err: err.message });
  };
  const ready = () => redis.status === 'ready';
  return {
    key(teamId, parts, now) {
      const slot = Math.floor(now.getTime() / QUARTER_HOUR_MS);
      return createHash('sha256')
        .update(JSON.stringify({ teamId, slot, ...parts }))
        .digest('hex')
        .slice(0, 40);
    },
    async get(teamId, key) {
      if (!ready()) return undefined;
      try {
        const [version, stored] = await redis.mget(
          redisKeys.queryDataVersion(teamId),
          redisKeys.queryResult(teamId, key),
        );
        if (!stored) return undefined;
        const entry = JSON.parse(stored) as {
          version: string;
          last_refresh: string;
          answer: Record<string, unknown>;
        };
        return {
          answer: entry.answer,
          lastRefresh: entry.last_refresh,
          fresh: entry.version === (version ?? '0'),
        };
      } catch (err) {
        warn(err as Error);
        return undefined;
      }
    },
    async version(teamId) {
      if (!ready()) return undefined;
      try {
        return (await redis.get(redisKeys.queryDataVersion(teamId))) ?? '0';
      } catch (err) {
        warn(err as Error);
        return undefined;
      }
    },
    async set(teamId, key, version, answer, lastRefresh) {
      if (!ready()) return;
      const text = JSON.stringify({ version, last_refresh: lastRefresh, answer });
      if (text.length > MAX_CACHED_BYTES) return;
      await redis
        .set(redisKeys.queryResult(teamId, key), text, 'EX', TTL_SECONDS)
        .catch((err: Error) => warn(err));
    },
  };
}
