// The hot path without Express: a POST to a capture path, spelled exactly (lower case, with or
// without its trailing slash), goes straight to the capture handler through @sett/http's
// fast-path factory (request id, CORS, HTTP metrics and errors as the Express app gives them).
// Express's router and per-request middleware were most of a single-event request's CPU.
// Everything else (operational routes, preflights, other methods -> 405, unknown paths -> 404,
// paths only Express's case-insensitive matching accepts) goes to the Express app.
import type { RequestListener } from 'node:http';
import { createFastPath } from '@sett/http';
import type { Logger } from '@sett/logger';
import type { Registry } from 'prom-client';
import { CAPTURE_PATHS, type CaptureHandler, type CapturePath } from './capture-routes';

const ROUTES = new Map<string, CapturePath>(
  CAPTURE_PATHS.flatMap((p) => [[p, p] as const, [`${p}/`, p] as const]),
);

export type CaptureFastPathDeps = {
  handler: CaptureHandler;
  logger: Logger;
  /** The registry the Express app's HTTP metrics live in. */
  registry: Registry;
  /** Everything this path does not serve. */
  fallback: RequestListener;
};

export function createCaptureFastPath(deps: CaptureFastPathDeps): RequestListener {
  return createFastPath<CapturePath>({
    match: (req, path) => (req.method === 'POST' ? ROUTES.get(path) : undefined),
    handle: (req, res, route) => deps.handler(req, res, route),
    // The Express router's template for the same route.
    routeLabel: (route) => route,
    fallback: deps.fallback,
    logger: deps.logger,
    registry: deps.registry,
  });
}
