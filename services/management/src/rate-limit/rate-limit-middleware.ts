// 429 with Retry-After once a key has used up its bucket (runs after authentication).
import type { RequestHandler } from 'express';
import { RateLimitedError } from '@sett/http';
import type { prom } from '@sett/http';
import { authOf } from '../auth/auth-context';
import type { TokenBucketLimiter } from './token-bucket';

export function rateLimitMiddleware(limiter: TokenBucketLimiter, throttled?: prom.Counter): RequestHandler {
  return (_req, res, next) => {
    const result = limiter.take(authOf(res).keyId);
    if (!result.ok) {
      throttled?.inc();
      throw new RateLimitedError(result.retryAfterSeconds);
    }
    next();
  };
}
