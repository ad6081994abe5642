// A request's browser session as a caller of the API: the session cookie names a verified live
// session, and a write (anything but GET, HEAD, OPTIONS) carries the session's CSRF token in
// X-CSRFToken, so another site cannot make a signed-in browser write. The caller is the user,
// with every scope: what it may do is what the user's role allows, by the same checks a key's
// requests go through. A request with an Authorization header is a key's, whatever its cookies.
import type { FastifyRequest } from 'fastify';
import { AuthenticationError, ForbiddenError } from '@sett/http';
import type { AuthContext } from '../auth/auth-context';
import { CSRF_HEADER, SESSION_COOKIE, readCookie } from './cookies';
import { csrfMatches, type SessionStore } from './session-store';

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/** 403 unless the request's X-CSRFToken is the session's token (every write in a session). */
export function requireCsrf(request: FastifyRequest, csrfToken: string): void {
  const given = request.headers[CSRF_HEADER];
  if (!csrfMatches(csrfToken, typeof given === 'string' ? given : undefined))
    throw new ForbiddenError(
      'CSRF check failed: a write in a session must send the sett_csrftoken cookie in the X-CSRFToken header.',
      'csrf_failed',
    );
}

export interface SessionAuthenticator {
  /** The session's caller; undefined when the request has no session cookie. */
  authenticate(request: FastifyRequest): Promise<AuthContext | undefined>;
}

export function createSessionAuthenticator(sessions: SessionStore): SessionAuthenticator {
  return {
    async authenticate(request) {
      const token = readCookie(request.headers, SESSION_COOKIE);
      if (!token) return undefined;
      const session = await sessions.find(token);
      if (!session || !session.verified)
        throw new AuthenticationError('The session has ended: sign in again.', 'not_authenticated');
      if (!SAFE_METHODS.has(request.method)) requireCsrf(request, session.csrfToken);
      return {
        ...session.auth,
        // Buckets of the request rate limit are per key: a session is its own bucket.
        keyId: `session:${session.sessionId.slice(0, 16)}`,
        sessionId: session.sessionId,
      };
    },
  };
}
