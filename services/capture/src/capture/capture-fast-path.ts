// The hot path without Express: a POST to a capture path, spelled exactly (lower case, with or
// without its trailing slash), goes straight to the capture handler. Express's router and
// per-request middleware were most of a single-event request's CPU. Everything else (operational
// routes, preflights, other methods -> 405, unknown paths -> 404, paths only Express's
// case-insensitive matching accepts) goes to the Express app. Both paths set the same CORS
// headers, count the same HTTP metrics and write errors with the same sendError.
import type { RequestListener } from 'node:http';
import { sendError, setCorsHeaders } from '@sett/http';
import type { Logger } from '@sett/logger';
import type { Counter, Histogram, Registry } from 'prom-client';
import { CAPTURE_PATHS, type CaptureHandler, type CapturePath } from './capture-routes';

const ROUTES = new Map<string, CapturePath>(
  CAPTURE_PATHS.flatMap((p) => [[p, p] as const, [`${p}/`, p] as const]),
);

export type CaptureFastPathDeps = {
  handler: CaptureHandler;
  logger: Logger;
  /** The registry the Express app's HTTP metrics live in (createServiceApp registers them). */
  registry: Registry;
  /** Everything this path does not serve. */
  fallback: RequestListener;
};

export function createCaptureFastPath(deps: CaptureFastPathDeps): RequestListener {
  const { handler, logger, fallback } = deps;
  const requests = deps.registry.getSingleMetric('http_requests_total') as Counter | undefined;
  const duration = deps.registry.getSingleMetric('http_request_duration_seconds') as Histogram | undefined;
  if (!requests || !duration)
    throw new Error('HTTP metrics are not registered (create the Express app first)');
  const debug = logger.isDebugEnabled();

  return (req, res) => {
    const url = req.url ?? '/';
    const q = url.indexOf('?');
    const route = req.method === 'POST' ? ROUTES.get(q === -1 ? url : url.slice(0, q)) : undefined;
    if (route === undefined) {
      fallback(req, res);
      return;
    }
    const start = process.hrtime.bigint();
    setCorsHeaders(req, res);
    const done = () => {
      const seconds = Number(process.hrtime.bigint() - start) / 1e9;
      requests.inc({ method: 'POST', route, status: String(res.statusCode) });
      duration.observe({ method: 'POST', route }, seconds);
      if (debug) {
        logger.debug('request', {
          method: 'POST',
          path: q === -1 ? url : url.slice(0, q),
          status: res.statusCode,
          ms: Math.round(seconds * 1000),
        });
      }
    };
    handler(req, res, route).then(done, (error: unknown) => {
      sendError(res, error, logger, req);
      done();
    });
  };
}
