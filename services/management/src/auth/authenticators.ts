// The credentials management's route table names, as the route mechanism asks for them:
// - `personal_key`: `Authorization: Bearer phx_…` (auth-middleware.ts looks it up, cached), the
//   route's scope checked against the key's scopes, and the projects or organizations the path
//   names against the key's limits (key-scoping.ts); or, without that header, a browser session
//   cookie (sessions/session-auth.ts: every scope, the user's role decides);
// - `personal_or_secret_key`: the same, or the project's secret key (`phs_…`, the current one or
//   the backup kept after a rotation; PostHog takes it on remote_config only). A secret key
//   stands for its project and holds no scopes: the handler checks that the path names it.
// The rate limit runs after either (rateLimitAfterAuth): per key and per user for personal keys,
// per project for secret keys.
import type { FastifyRequest } from 'fastify';
import { AuthenticationError, bearerToken, RateLimitedError, type Authenticator } from '@sett/http';
import type { RateLimiter } from '../rate-limit/rate-limiter';
import { checkScope, type AuthContext } from './auth-context';
import type { KeyAuthenticator } from './auth-middleware';
import { checkKeyScoping } from './key-scoping';
import type { SessionAuthenticator } from '../sessions/session-auth';

/** A project secret key's caller: its project. */
export interface SecretKeyCaller {
  kind: 'secret_key';
  teamId: number;
  /** The project's public API token (what `?token=` must name when given). */
  apiToken: string;
}

export type PersonalOrSecretCaller = AuthContext | SecretKeyCaller;

export function isSecretKeyCaller(caller: PersonalOrSecretCaller): caller is SecretKeyCaller {
  return (caller as SecretKeyCaller).kind === 'secret_key';
}

const SECRET_KEY_RE = /^phs_[A-Za-z0-9]{20,200}$/;

export function personalKeyAuthenticator(
  keys: KeyAuthenticator,
  sessions?: SessionAuthenticator,
): Authenticator<AuthContext> {
  return {
    // A browser session when the request has no Authorization header and a session cookie.
    authenticate: async (request: FastifyRequest) =>
      (request.headers.authorization === undefined ? await sessions?.authenticate(request) : undefined) ??
      keys.authenticate(request.raw),
    authorize: (auth, scope, request) => {
      checkScope(auth.scopes, scope);
      checkKeyScoping(auth, request);
    },
  };
}

export function personalOrSecretKeyAuthenticator(
  keys: KeyAuthenticator,
): Authenticator<PersonalOrSecretCaller> {
  return {
    async authenticate(request) {
      const bearer = bearerToken(request.headers.authorization);
      if (!bearer?.startsWith('phs_')) return keys.authenticate(request.raw);
      if (!SECRET_KEY_RE.test(bearer))
        throw new AuthenticationError('Secret API key is malformed.', 'authentication_failed');
      // Remembered for a few seconds, and throttled per client like personal keys (auth-middleware).
      const team = await keys.authenticateSecretKey(request.raw, bearer);
      return { kind: 'secret_key', teamId: team.teamId, apiToken: team.apiToken };
    },
    authorize(auth, scope, request) {
      if (isSecretKeyCaller(auth)) return;
      checkScope(auth.scopes, scope);
      checkKeyScoping(auth, request);
    },
  };
}

/** 429 with Retry-After once the caller's key, user or (secret key) project used up its bucket. */
export function rateLimitAfterAuth(limiter: RateLimiter) {
  return async (caller: unknown): Promise<void> => {
    const c = caller as PersonalOrSecretCaller;
    const decision = await limiter.take(
      isSecretKeyCaller(c) ? { key: `secret:${c.teamId}` } : { key: c.keyId, user: c.userId },
    );
    if (!decision.ok) throw new RateLimitedError(decision.retryAfterSeconds);
  };
}
