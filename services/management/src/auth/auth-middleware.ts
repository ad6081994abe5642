// Personal API key authentication: `Authorization: Bearer phx_...`, looked up by its hash (keys
// are never stored in clear). One query through the pg pool loads the key, its user and the
// user's context (membership levels, reachable projects). The lookup goes through @sett/keys'
// createKeyLookup, shared with decide: the answer, found or unknown, is cached in process for a
// few seconds, so dashboards issuing bursts of requests do one database read per key and a
// repeated unknown key none (writes in this process clear the cache), and a client address that
// keeps presenting unknown keys gets 429 instead of a query each, without a valid key ever being
// refused. last_used_at is written at most once a minute per key, off the request path. Project
// keys (phc_), malformed and unknown keys are 401; scopes are checked per route by the route
// mechanism (authenticators.ts).
import type { IncomingMessage } from 'node:http';
import type pg from 'pg';
import type { PrismaClient } from '@sett/db';
import {
  AuthenticationError,
  RateLimitedError,
  bearerToken,
  clientIp,
  type ClientIpOptions,
} from '@sett/http';
import { createKeyLookup, hashPersonalApiKey, hashProjectSecretKey } from '@sett/keys';
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
  /** How the client address (the unknown-key throttle's key) is read: TRUSTED_PROXY_HOPS. */
  clientIp?: ClientIpOptions;
}

/** What a project secret key (phs_, current or backup) names. */
export interface SecretKeyProject {
  teamId: number;
  apiToken: string;
}

type Request = Pick<IncomingMessage, 'headers' | 'socket'>;

export interface KeyAuthenticator {
  /** The caller of `req` (its Authorization header, its address for the unknown-key throttle). */
  authenticate(req: Request): Promise<AuthContext>;
  /** The project of a well-formed secret key presented by `req` (remote_config), or 401 / 429. */
  authenticateSecretKey(req: Request, key: string): Promise<SecretKeyProject>;
  /** Forget cached lookups (after a key or user is changed or deleted in this process). */
  clear(): void;
  /** Resolves once the last_used_at writes under way are done (before the database closes). */
  settle(): Promise<void>;
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

// A user and their context: organizations with levels and the projects of those, in columns a
// key lookup and a session lookup both select (indexes: organization_memberships.user_id,
// teams.organization_id).
export const USER_CONTEXT_COLUMNS = `u.id AS user_id, u.is_staff, u.is_active,
  u.current_team_id, u.current_organization_id,
  COALESCE((SELECT json_agg(json_build_array(m.organization_id, m.level) ORDER BY m.joined_at, m.id)
            FROM organization_memberships m WHERE m.user_id = u.id), '[]') AS levels,
  COALESCE((SELECT json_agg(json_build_array(t.id, t.organization_id)) FROM organization_memberships m
            JOIN teams t ON t.organization_id = m.organization_id AND t.deleted_at IS NULL WHERE m.user_id = u.id), '[]') AS teams`;

export interface UserContextRow {
  user_id: number;
  is_staff: boolean;
  is_active: boolean;
  current_team_id: number | null;
  current_organization_id: string | null;
  levels: [string, number][];
  teams: [number, string][];
}

/** The AuthContext of a user context row, with what the credential itself grants. */
export function userContextOf(
  row: UserContextRow,
  credential: Pick<AuthContext, 'keyId' | 'scopes' | 'scopedTeams' | 'scopedOrganizations'>,
): AuthContext {
  return {
    ...credential,
    userId: row.user_id,
    isStaff: row.is_staff,
    levels: new Map(row.levels),
    teamIds: new Set(row.teams.map(([id]) => id)),
    teamOrganizations: new Map(row.teams),
    currentTeamId: row.current_team_id,
    currentOrganizationId: row.current_organization_id,
  };
}

// The key and its active user with the user's context, in one round trip (index:
// personal_api_keys.secure_value).
const KEY_CONTEXT_SQL = `
SELECT k.id, k.scopes, k.scoped_teams, k.scoped_organizations, ${USER_CONTEXT_COLUMNS}
FROM personal_api_keys k JOIN users u ON u.id = k.user_id
WHERE k.secure_value = $1`;

interface KeyContextRow extends UserContextRow {
  id: string;
  scopes: string[];
  scoped_teams: number[];
  scoped_organizations: string[];
}

const SECRET_KEY_SQL = `
SELECT id, api_token FROM teams WHERE secret_api_token_hash = $1
UNION ALL
SELECT id, api_token FROM teams WHERE secret_api_token_backup_hash = $1
LIMIT 1`;

type Known = { kind: 'personal'; auth: AuthContext } | { kind: 'secret'; project: SecretKeyProject };

export function createKeyAuthenticator(opts: AuthCacheOptions): KeyAuthenticator {
  const ttlMs = opts.ttlMs ?? 5_000;
  const now = opts.now ?? Date.now;
  // Both kinds in one lookup, so one client's misses count together: by `<kind>:<key hash>`.
  // Unknown keys and inactive users are remembered (as null) for the same time as found ones.
  const keys = createKeyLookup<Known>({
    ttlMs,
    maxEntries: 10_000,
    now,
    load: (cacheKey) =>
      cacheKey.startsWith('secret:') ? loadSecret(cacheKey.slice(7)) : loadPersonal(cacheKey.slice(9)),
  });

  async function loadPersonal(hash: string): Promise<Known | null> {
    const row = (await opts.pool.query<KeyContextRow>(KEY_CONTEXT_SQL, [hash])).rows[0];
    if (!row || !row.is_active) return null;
    const auth = userContextOf(row, {
      keyId: row.id,
      scopes: row.scopes,
      scopedTeams: row.scoped_teams,
      scopedOrganizations: row.scoped_organizations,
    });
    return { kind: 'personal', auth };
  }

  async function loadSecret(hash: string): Promise<Known | null> {
    const row = (await opts.pool.query<{ id: number; api_token: string }>(SECRET_KEY_SQL, [hash])).rows[0];
    return row ? { kind: 'secret', project: { teamId: row.id, apiToken: row.api_token } } : null;
  }

  /** What the key names, null when nothing; 429 for a throttled client's unknown key. */
  async function find(req: Request, cacheKey: string): Promise<Known | null> {
    const client = clientIp(req.headers, req.socket.remoteAddress, opts.clientIp);
    const found = await keys.find(cacheKey, client);
    if (found.kind === 'throttled') throw new RateLimitedError(found.retryAfterSeconds);
    return found.kind === 'found' ? found.value : null;
  }

  const lastUsedWritten = new Map<string, number>();
  const writing = new Set<Promise<void>>();

  function touch(keyId: string) {
    const t = now();
    if (t - (lastUsedWritten.get(keyId) ?? 0) < LAST_USED_INTERVAL_MS) return;
    lastUsedWritten.set(keyId, t);
    const write = opts.prisma.personalApiKey
      .updateMany({ where: { id: keyId }, data: { lastUsedAt: new Date(t) } })
      .then(
        () => undefined,
        (err: unknown) => opts.logger.warn('could not update last_used_at', { err: (err as Error).message }),
      )
      .finally(() => writing.delete(write));
    writing.add(write);
  }

  return {
    async authenticate(req) {
      const token = parseBearer(req.headers.authorization);
      const known = await find(req, `personal:${hashPersonalApiKey(token)}`);
      if (known?.kind !== 'personal')
        throw new AuthenticationError('Personal API key is invalid.', 'authentication_failed');
      touch(known.auth.keyId);
      return known.auth;
    },
    async authenticateSecretKey(req, key) {
      const known = await find(req, `secret:${hashProjectSecretKey(key)}`);
      if (known?.kind !== 'secret')
        throw new AuthenticationError('Secret API key is invalid.', 'authentication_failed');
      return known.project;
    },
    clear() {
      keys.clear();
    },
    async settle() {
      await Promise.all(writing);
    },
  };
}
