// CORS the way PostHog's capture answers browsers: echo the Origin (with credentials), allow the
// headers the SDKs send, and put the headers on every response, errors included, so a browser
// can read a 4xx/5xx instead of seeing an opaque network failure. Preflights end here.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { RequestHandler } from 'express';

/** The headers every answer carries (the node:http fast path sets them itself). */
export function setCorsHeaders(req: IncomingMessage, res: ServerResponse): void {
  const origin = req.headers.origin;
  if (origin) {
    res.setHeader('Access-Control-Allow-Origin', origin);
    res.setHeader('Access-Control-Allow-Credentials', 'true');
    res.setHeader('Vary', 'Origin');
  } else {
    res.setHeader('Access-Control-Allow-Origin', '*');
  }
}

export const corsMiddleware: RequestHandler = (req, res, next) => {
  setCorsHeaders(req, res);
  if (req.method === 'OPTIONS') {
    const requested = req.headers['access-control-request-headers'];
    res.setHeader('Access-Control-Allow-Methods', 'GET, POST, OPTIONS');
    res.setHeader(
      'Access-Control-Allow-Headers',
      requested || 'X-Requested-With, Content-Type, Content-Encoding',
    );
    res.setHeader('Access-Control-Max-Age', '86400');
    res.status(200).end();
    return;
  }
  next();
};
