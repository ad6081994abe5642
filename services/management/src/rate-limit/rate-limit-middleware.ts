// 429 with Retry-After once the caller's key or user has used up its bucket (runs after
// authentication, so the user is known). One Redis round trip per request: see rate-limiter.ts.
import type { RequestHandler } from 'express';
import { RateLimitedError } from '@sett/http';
import { authOf } from '../auth/auth-context';
import type { RateLimiter } from './rate-limiter';

export function rateLimitMiddleware(limiter: RateLimiter): RequestHandler {
  return async (_req, res, next) => {
    const auth = authOf(res);
    const decision = await limiter.take({ key: auth.keyId, user: auth.userId });
    if (!decision.ok) throw new RateLimitedError(decision.retryAfterSeconds);
    next();
  };
}
