// The node:http fast path every public service puts in front of its Express app: a request the
// service's `match` claims (a POST to one of its hot endpoints, spelled exactly) is served by
// `handle` without Express's router and per-request middleware; everything else (operational
// routes, preflights, 404/405, what only Express's case-insensitive matching accepts) goes to
// the Express app unchanged. Served requests get what the Express app would give them: the
// request id (echoed, and on every log line), the CORS headers (unless `cors: false`), the HTTP metrics under a fixed
// route label, the debug request line, and errors written by the same sendError.
import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import type { Registry } from 'prom-client';
import type { Logger } from '@sett/logger';
import { setCorsHeaders } from './cors';
import { sendError } from './error-middleware';
import { httpRequestObserver } from './metrics';
import { closesConnection } from './read-body';
import { withRequestId } from './request-id';

export interface FastPathOptions<R> {
  /** What the request is (its metrics route label comes from `routeLabel`), or undefined to
   * leave it to the fallback. `path` is the URL without its query string. */
  match(req: IncomingMessage, path: string): R | undefined;
  /** Serves the request: writes the answer, or throws (rejects) for sendError to write. */
  handle(req: IncomingMessage, res: ServerResponse, route: R, requestId: string): Promise<void>;
  /** The metrics route label of a matched request (fixed per route, never the raw path). */
  routeLabel(route: R): string;
  /** Everything `match` does not claim: the service's Express app. */
  fallback: RequestListener;
  logger: Logger;
  /** The registry of the Express app's HTTP metrics (shared, see httpRequestObserver). */
  registry: Registry;
  /** Whether served answers carry the public services' CORS headers, as their Express apps
   * do (default true); a private API whose Express app sends none passes false. */
  cors?: boolean;
}

export function createFastPath<R>(opts: FastPathOptions<R>): RequestListener {
  const { logger, fallback } = opts;
  const observe = httpRequestObserver(opts.registry);
  const debug = logger.isDebugEnabled();
  const cors = opts.cors ?? true;

  return (req, res) => {
    const url = req.url ?? '/';
    const q = url.indexOf('?');
    const path = q === -1 ? url : url.slice(0, q);
    const route = opts.match(req, path);
    if (route === undefined) {
      fallback(req, res);
      return;
    }
    withRequestId(req, res, (requestId) => {
      const start = process.hrtime.bigint();
      if (cors) setCorsHeaders(req, res);
      const label = opts.routeLabel(route);
      const done = () => {
        const seconds = Number(process.hrtime.bigint() - start) / 1e9;
        observe(req.method, label, res.statusCode, seconds);
        if (debug)
          logger.debug('request', {
            method: req.method,
            path,
            status: res.statusCode,
            ms: Math.round(seconds * 1000),
          });
      };
      opts.handle(req, res, route, requestId).then(done, (error: unknown) => {
        // The rest of an oversized body was left unread: do not let Node drain it for keep-alive.
        if (closesConnection(error) && !res.headersSent) res.setHeader('Connection', 'close');
        sendError(res, error, logger, req);
        done();
      });
    });
  };
}
