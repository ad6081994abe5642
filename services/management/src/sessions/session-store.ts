// Browser sessions, stored server-side: the cookie carries a random token, the row its SHA-256
// (a database read never yields a usable cookie). A session is created by a correct password;
// while the user's second factor is pending it is `verified: false`, lives 10 minutes and
// authenticates nothing. The second factor replaces it by a new verified session (a new token:
// nothing learnt before sign-in carries over). Each request reads its session with the user's
// context in one query, uncached, so a logout or a password change ends it at once everywhere.
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type pg from 'pg';
import { USER_CONTEXT_COLUMNS, userContextOf, type UserContextRow } from '../auth/auth-middleware';
import type { AuthContext } from '../auth/auth-context';

export const PENDING_SECOND_FACTOR_MS = 10 * 60_000;

const hashToken = (token: string) => createHash('sha256').update(token).digest('hex');
const newToken = () => randomBytes(32).toString('base64url');

/** A session token as the cookie carries it (43 base64url characters); anything else is no session. */
export const SESSION_TOKEN_RE = /^[A-Za-z0-9_-]{43}$/;

export interface NewSession {
  token: string;
  csrfToken: string;
  expiresAt: Date;
}

export interface SessionCaller {
  auth: AuthContext;
  csrfToken: string;
  verified: boolean;
  sessionId: string;
}

const SESSION_CONTEXT_SQL = `
SELECT s.id AS session_id, s.csrf_token, s.verified, ${USER_CONTEXT_COLUMNS}
FROM user_sessions s JOIN users u ON u.id = s.user_id
WHERE s.id = $1 AND s.expires_at > now()`;

type SessionRow = UserContextRow & { session_id: string; csrf_token: string; verified: boolean };

export interface SessionStoreOptions {
  pool: pg.Pool;
  /** How long a verified session lives (SESSION_TTL_MS). */
  ttlMs: number;
}

export function createSessionStore({ pool, ttlMs }: SessionStoreOptions) {
  async function insert(
    userId: number,
    verified: boolean,
    client: { ip?: string; userAgent?: string },
  ): Promise<NewSession> {
    const token = newToken();
    const csrfToken = newToken();
    const expiresAt = new Date(Date.now() + (verified ? ttlMs : PENDING_SECOND_FACTOR_MS));
    await pool.query(
      `INSERT INTO user_sessions (id, user_id, csrf_token, verified, expires_at, ip, user_agent)
       VALUES ($1, $2, $3, $4, $5, $6, $7)`,
      [
        hashToken(token),
        userId,
        csrfToken,
        verified,
        expiresAt,
        client.ip?.slice(0, 64) ?? null,
        client.userAgent?.slice(0, 512) ?? null,
      ],
    );
    return { token, csrfToken, expiresAt };
  }

  return {
    /** A session after a correct password: verified unless a second factor is still due. */
    create: insert,

    /** The live session of a cookie's token with its user's context, or null. */
    async find(token: string): Promise<SessionCaller | null> {
      if (!SESSION_TOKEN_RE.test(token)) return null;
      const row = (await pool.query<SessionRow>(SESSION_CONTEXT_SQL, [hashToken(token)])).rows[0];
      if (!row || !row.is_active) return null;
      return {
        auth: userContextOf(row, { keyId: '', scopes: ['*'], scopedTeams: [], scopedOrganizations: [] }),
        csrfToken: row.csrf_token,
        verified: row.verified,
        sessionId: row.session_id,
      };
    },

    /** Replaces a pending session by a verified one (a new token); null when it is gone. */
    async promote(
      sessionId: string,
      userId: number,
      client: { ip?: string; userAgent?: string },
    ): Promise<NewSession | null> {
      const gone = await pool.query(
        `DELETE FROM user_sessions WHERE id = $1 AND user_id = $2 AND NOT verified`,
        [sessionId, userId],
      );
      if (gone.rowCount === 0) return null;
      return insert(userId, true, client);
    },

    async end(sessionId: string): Promise<void> {
      await pool.query(`DELETE FROM user_sessions WHERE id = $1`, [sessionId]);
    },

    /** Ends every session of a user but `keep` (after a password change). */
    async endAllOf(userId: number, keep?: string): Promise<void> {
      await pool.query(`DELETE FROM user_sessions WHERE user_id = $1 AND id IS DISTINCT FROM $2`, [
        userId,
        keep ?? null,
      ]);
    },
  };
}

export type SessionStore = ReturnType<typeof createSessionStore>;

/** Drops expired sessions (an indexed delete, from the background jobs' schedule each minute). */
export async function purgeExpiredSessions(pool: Pick<pg.Pool, 'query'>): Promise<number> {
  return (await pool.query(`DELETE FROM user_sessions WHERE expires_at <= now()`)).rowCount ?? 0;
}

/** Whether the header's CSRF token is the session's, in constant time. */
export function csrfMatches(expected: string, given: string | undefined): boolean {
  if (!given) return false;
  const a = Buffer.from(expected);
  const b = Buffer.from(given);
  return a.length === b.length && timingSafeEqual(a, b);
}
