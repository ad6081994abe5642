// Who may read a project's flag definitions: `Authorization: Bearer <key>` where the key is a
// personal API key (phx_) with feature_flag:read whose user belongs to the project's
// organization, or the project's own secret key (phs_, current or backup after a rotation).
// Keys are looked up by hash in Postgres (decide has no Prisma; the scheme is @sett/keys') through
// @sett/keys' createKeyLookup, shared with management: answers, good or unknown, are remembered
// for a few seconds, so steady polling costs no query, and a client address that keeps
// presenting unknown keys is throttled (429) without ever refusing a valid key. Pure checks
// (shape, scope, project) are separate from the lookup so they have unit tests.
import type { Pool } from 'pg';
import { AuthenticationError, ForbiddenError, RateLimitedError, bearerToken } from '@sett/http';
import { createKeyLookup, hasScope, hashPersonalApiKey, hashProjectSecretKey } from '@sett/keys';

export type Credential =
  | { kind: 'personal'; scopes: readonly string[]; organizationIds: ReadonlySet<string> }
  | { kind: 'secret'; teamId: number };

export interface PresentedKey {
  kind: Credential['kind'];
  /** The key as presented: the cache is keyed on it so a hit costs no hashing. Never logged. */
  value: string;
}

/** What the database holds for a key (@sett/keys' scheme for each kind). */
function hashOf(key: PresentedKey): string {
  return key.kind === 'secret' ? hashProjectSecretKey(key.value) : hashPersonalApiKey(key.value);
}

const KEY_RE = /^ph[xs]_[A-Za-z0-9]{20,200}$/;

/** The key of an Authorization header, or the 401 PostHog gives for it. */
export function parseKeyHeader(header: string | undefined): PresentedKey {
  const key = bearerToken(header);
  if (key === undefined)
    throw new AuthenticationError('Authentication credentials were not provided.', 'not_authenticated');
  if (key === null)
    throw new AuthenticationError(
      'Invalid Authorization header: expected "Bearer <personal API key or project secret key>".',
      'authentication_failed',
    );
  if (!KEY_RE.test(key))
    throw new AuthenticationError(
      'A personal API key (phx_...) or the project secret key (phs_...) is required.',
      'authentication_failed',
    );
  return { kind: key.startsWith('phs_') ? 'secret' : 'personal', value: key };
}

/** 403 unless the credential may read this project's flag definitions. */
export function authorize(credential: Credential, project: { teamId: number; organizationId: string }): void {
  if (credential.kind === 'secret') {
    if (credential.teamId !== project.teamId)
      throw new ForbiddenError(
        'This secret key does not belong to the project of this token.',
        'permission_denied',
      );
    return;
  }
  if (!hasScope(credential.scopes, 'feature_flag:read'))
    throw new ForbiddenError("API key missing required scope 'feature_flag:read'", 'permission_denied');
  if (!credential.organizationIds.has(project.organizationId))
    throw new ForbiddenError('You do not have access to this project.', 'permission_denied');
}

const PERSONAL_SQL = `
SELECT k.scopes,
  COALESCE((SELECT array_agg(m.organization_id::text) FROM organization_memberships m
            WHERE m.user_id = u.id), '{}') AS organization_ids
FROM personal_api_keys k JOIN users u ON u.id = k.user_id
WHERE k.secure_value = $1 AND u.is_active`;

const SECRET_SQL = `
SELECT id FROM teams WHERE secret_api_token_hash = $1
UNION ALL
SELECT id FROM teams WHERE secret_api_token_backup_hash = $1
LIMIT 1`;

export interface KeyVerifier {
  /**
   * The credential of a presented key; null when no key has that hash. Rejects on Postgres
   * errors, and with RateLimitedError when `client` is over the unknown-key limit and the key
   * is not a valid one (@sett/keys createKeyLookup).
   */
  verify(
    key: PresentedKey,
    race: <T>(work: Promise<T>) => Promise<T>,
    client?: string,
  ): Promise<Credential | null>;
  clear(): void;
}

export function createKeyVerifier(opts: {
  pool: Pool;
  ttlMs: number;
  maxEntries?: number;
  now?: () => number;
}): KeyVerifier {
  // Keyed on the key as presented (its phx_/phs_ prefix says which kind): a hit costs no hashing.
  const keys = createKeyLookup<Credential>({
    ttlMs: opts.ttlMs,
    maxEntries: opts.maxEntries ?? 10_000,
    now: opts.now,
    load: (value) => lookup({ kind: value.startsWith('phs_') ? 'secret' : 'personal', value }),
  });

  async function lookup(key: PresentedKey): Promise<Credential | null> {
    if (key.kind === 'secret') {
      const row = (await opts.pool.query<{ id: number }>(SECRET_SQL, [hashOf(key)])).rows[0];
      return row ? { kind: 'secret', teamId: row.id } : null;
    }
    const row = (
      await opts.pool.query<{ scopes: string[]; organization_ids: string[] }>(PERSONAL_SQL, [hashOf(key)])
    ).rows[0];
    return row
      ? { kind: 'personal', scopes: row.scopes, organizationIds: new Set(row.organization_ids) }
      : null;
  }

  return {
    async verify(key, race, client) {
      const found = await keys.find(key.value, client, race);
      if (found.kind === 'throttled') throw new RateLimitedError(found.retryAfterSeconds);
      return found.kind === 'found' ? found.value : null;
    },
    clear() {
      keys.clear();
    },
  };
}
