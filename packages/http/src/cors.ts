// CORS for the public endpoints (capture, decide), as PostHog answers browser SDKs: the
// caller's origin is echoed with credentials allowed (or * without an Origin), the headers go on
// every response, errors included, so a browser can read a 4xx/5xx, and preflights end here.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { RequestHandler } from 'express';

/** The headers every answer carries (node:http fast paths call it themselves). */
export function setCorsHeaders(req: IncomingMessage, res: ServerResponse): void {
  const origin = req.headers.origin;
  res.setHeader('Access-Control-Allow-Origin', origin && origin !== 'null' ? origin : '*');
  if (origin) res.setHeader('Access-Control-Allow-Credentials', 'true');
  res.setHeader('Vary', 'Origin');
}

export function corsMiddleware(opts: { preflightStatus?: 200 | 204 } = {}): RequestHandler {
  return (req, res, next) => {
    setCorsHeaders(req, res);
    if (req.method === 'OPTIONS') {
      res.setHeader('Access-Control-Allow-Methods', 'GET, POST, OPTIONS');
      res.setHeader(
        'Access-Control-Allow-Headers',
        (req.headers['access-control-request-headers'] as string | undefined) ??
          'X-Requested-With, Content-Type, Content-Encoding',
      );
      res.setHeader('Access-Control-Max-Age', '86400');
      res.status(opts.preflightStatus ?? 204).end();
      return;
    }
    next();
  };
}
