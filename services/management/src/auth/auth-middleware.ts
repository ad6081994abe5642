// Personal API key authentication: `Authorization: Bearer phx_...`, looked up by its hash (keys
// are never stored in clear). The lookup is cached in process for a few seconds so dashboards
// issuing bursts of requests do one database read per key, and last_used_at is written at most
// once a minute per key, off the request path. Project keys (phc_), malformed and unknown keys
// are 401; scopes are checked per operation by requireScope.
import type { RequestHandler } from 'express';
import type { PrismaClient } from '@sett/db';
import { AuthenticationError } from '@sett/http';
import { hashPersonalApiKey } from '@sett/keys';
import type { Logger } from '@sett/logger';
import type { AuthContext } from './auth-context';

const KEY_RE = /^phx_[A-Za-z0-9]{20,200}$/;
const LAST_USED_INTERVAL_MS = 60_000;

export interface AuthCacheOptions {
  prisma: PrismaClient;
  logger: Logger;
  ttlMs?: number;
  now?: () => number;
}

export interface KeyAuthenticator {
  authenticate(header: string | undefined): Promise<AuthContext>;
  /** Forget cached lookups (after a key or user is deleted in this process). */
  clear(): void;
}

/** The bearer token of an Authorization header, or a 401 explaining what is wrong with it. */
export function parseBearer(header: string | undefined): string {
  if (!header)
    throw new AuthenticationError('Authentication credentials were not provided.', 'not_authenticated');
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
  if (!match)
    throw new AuthenticationError(
      'Invalid Authorization header: expected "Bearer <personal API key>".',
      'authentication_failed',
    );
  const token = match[1]!;
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

export function createKeyAuthenticator(opts: AuthCacheOptions): KeyAuthenticator {
  const ttlMs = opts.ttlMs ?? 5_000;
  const now = opts.now ?? Date.now;
  const cache = new Map<string, { auth: AuthContext; expiresAt: number }>();
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
      if (hit && hit.expiresAt > now()) {
        touch(hit.auth.keyId);
        return hit.auth;
      }
      const row = await opts.prisma.personalApiKey.findUnique({
        where: { secureValue: hash },
        select: { id: true, scopes: true, user: { select: { id: true, isStaff: true, isActive: true } } },
      });
      if (!row || !row.user.isActive) {
        cache.delete(hash);
        throw new AuthenticationError('Personal API key is invalid.', 'authentication_failed');
      }
      const auth: AuthContext = {
        keyId: row.id,
        userId: row.user.id,
        isStaff: row.user.isStaff,
        scopes: row.scopes,
      };
      if (cache.size > 10_000) cache.clear();
      cache.set(hash, { auth, expiresAt: now() + ttlMs });
      touch(row.id);
      return auth;
    },
    clear() {
      cache.clear();
    },
  };
}

export function authMiddleware(authenticator: KeyAuthenticator): RequestHandler {
  return async (req, res, next) => {
    res.locals.auth = await authenticator.authenticate(req.headers.authorization);
    next();
  };
}
