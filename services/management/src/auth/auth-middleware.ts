// Personal API key authentication: `Authorization: Bearer phx_...`, looked up by its hash (keys
// are never stored in clear). One query through the pg pool loads the key, its user and the
// user's context (membership levels, reachable projects); the result is cached in process for
// a few seconds so dashboards issuing bursts of requests do one database read per key (writes
// in this process clear the cache), and last_used_at is written at most once a minute per key,
// off the request path. Project keys (phc_), malformed and unknown keys
// are 401; scopes are checked per route by the route mechanism (authenticators.ts).
import type pg from 'pg';
import { createLocalCache } from '@sett/cache';
import type { PrismaClient } from '@sett/db';
import { AuthenticationError, bearerToken } from '@sett/http';
import { hashPersonalApiKey } from '@sett/keys';
import type { Logger } from '@sett/logger';
import type { AuthContext } from './auth-context';

const KEY_RE = /^phx_[A-Za-z0-9]{20,200}$/;
const LAST_USED_INTERVAL_MS = 60_000;

export interface AuthCacheOptions {
  pool: pg.Pool;
  prisma: PrismaClient;
  logger: Logger;
  ttlMs?: number;
  now?: () => number;
}

export interface KeyAuthenticator {
  authenticate(header: string | undefined): Promise<AuthContext>;
  /** Forget cached lookups (after a key or user is changed or deleted in this process). */
  clear(): void;
}

/** The bearer token of an Authorization header, or a 401 explaining what is wrong with it. */
export function parseBearer(header: string | undefined): string {
  const token = bearerToken(header);
  if (token === undefined)
    throw new AuthenticationError('Authentication credentials were not provided.', 'not_authenticated');
  if (token === null)
    throw new AuthenticationError(
      'Invalid Authorization header: expected "Bearer <personal API key>".',
      'authentication_failed',
    );
  if (token.startsWith('phc_')) {
    throw new AuthenticationError(
      'A project API key cannot be used here: use a personal API key.',
      'authentication_failed',
    );
  }
  if (!KEY_RE.test(token))
    throw new AuthenticationError('Personal API key is malformed.', 'authentication_failed');
  return token;
}

// The key, its active user, the user's organizations with levels and their projects, in one
// round trip (indexes: personal_api_keys.secure_value, organization_memberships.user_id,
// teams.organization_id).
const KEY_CONTEXT_SQL = `
SELECT k.id, k.scopes, u.id AS user_id, u.is_staff, u.is_active, u.current_team_id,
  COALESCE((SELECT json_agg(json_build_array(m.organization_id, m.level))
            FROM organization_memberships m WHERE m.user_id = u.id), '[]') AS levels,
  COALESCE((SELECT array_agg(t.id) FROM organization_memberships m
            JOIN teams t ON t.organization_id = m.organization_id AND t.deleted_at IS NULL WHERE m.user_id = u.id), '{}') AS team_ids
FROM personal_api_keys k JOIN users u ON u.id = k.user_id
WHERE k.secure_value = $1`;

interface KeyContextRow {
  id: string;
  scopes: string[];
  user_id: number;
  is_staff: boolean;
  is_active: boolean;
  current_team_id: number | null;
  levels: [string, number][];
  team_ids: number[];
}

export function createKeyAuthenticator(opts: AuthCacheOptions): KeyAuthenticator {
  const ttlMs = opts.ttlMs ?? 5_000;
  const now = opts.now ?? Date.now;
  const cache = createLocalCache<string, AuthContext>({ ttlMs, maxEntries: 10_000, now });
  const lastUsedWritten = new Map<string, number>();

  function touch(keyId: string) {
    const t = now();
    if (t - (lastUsedWritten.get(keyId) ?? 0) < LAST_USED_INTERVAL_MS) return;
    lastUsedWritten.set(keyId, t);
    opts.prisma.personalApiKey
      .updateMany({ where: { id: keyId }, data: { lastUsedAt: new Date(t) } })
      .catch((err: unknown) =>
        opts.logger.warn('could not update last_used_at', { err: (err as Error).message }),
      );
  }

  return {
    async authenticate(header) {
      const token = parseBearer(header);
      const hash = hashPersonalApiKey(token);
      const hit = cache.get(hash);
      if (hit) {
        touch(hit.keyId);
        return hit;
      }
      const row = (await opts.pool.query<KeyContextRow>(KEY_CONTEXT_SQL, [hash])).rows[0];
      if (!row || !row.is_active) {
        cache.delete(hash);
        throw new AuthenticationError('Personal API key is invalid.', 'authentication_failed');
      }
      const auth: AuthContext = {
        keyId: row.id,
        userId: row.user_id,
        isStaff: row.is_staff,
        scopes: row.scopes,
        levels: new Map(row.levels),
        teamIds: new Set(row.team_ids),
        currentTeamId: row.current_team_id,
      };
      cache.set(hash, auth);
      touch(row.id);
      return auth;
    },
    clear() {
      cache.clear();
    },
  };
}
