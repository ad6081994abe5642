// The hot path: POST /decide and /flags served by plain node:http through @sett/http's fast-path
// factory (request id, CORS, HTTP metrics and errors as the Express app gives them), without
// Express routing, its body parser and per-request middleware (together about a third of a
// request's CPU). Anything else goes to the Express app (operational routes, preflights,
// 404/405), and so do requests this path does not handle itself: a Content-Encoding body
// (Express's body reader inflates it) and paths only Express's case-insensitive matching
// accepts. Answers are the same on both paths: both call the same `answer`.
import type { RequestListener, ServerResponse } from 'node:http';
import { createFastPath, readBody } from '@sett/http';
import type { Logger } from '@sett/logger';
import type { Registry } from 'prom-client';
import { JSON_CONTENT_TYPE, type DecideAnswerer } from './decide-routes';
import type { Endpoint } from './response-format';

const ENDPOINTS = new Map<string, Endpoint>([
  ['/decide', 'decide'],
  ['/decide/', 'decide'],
  ['/flags', 'flags'],
  ['/flags/', 'flags'],
]);

/** The Express routes' templates (decide-routes.ts), so both paths count under one label. */
const ROUTE_LABELS: Record<Endpoint, string> = { decide: '/decide,/decide/', flags: '/flags,/flags/' };

export interface DecideHandlerDeps {
  answer: DecideAnswerer;
  logger: Logger;
  registry: Registry;
  maxBodyBytes: number;
  /** Everything this path does not serve. */
  fallback: RequestListener;
}

export function createDecideHandler(deps: DecideHandlerDeps): RequestListener {
  return createFastPath<Endpoint>({
    match(req, path) {
      if (req.method !== 'POST') return undefined;
      const encoding = req.headers['content-encoding'];
      if (encoding !== undefined && encoding.toLowerCase() !== 'identity') return undefined;
      return ENDPOINTS.get(path);
    },
    async handle(req, res, endpoint) {
      const url = req.url ?? '/';
      const q = url.indexOf('?');
      const query = q === -1 ? undefined : new URLSearchParams(url.slice(q + 1));
      const body = await readBody(req, deps.maxBodyBytes);
      const json = await deps.answer(endpoint, {
        version: single(query, 'v'),
        compression: single(query, 'compression'),
        config: single(query, 'config'),
        body,
        headers: req.headers,
        remoteAddress: req.socket.remoteAddress,
      });
      send(res, json);
    },
    routeLabel: (endpoint) => ROUTE_LABELS[endpoint],
    fallback: deps.fallback,
    logger: deps.logger,
    registry: deps.registry,
  });
}

function send(res: ServerResponse, json: string): void {
  res.statusCode = 200;
  res.setHeader('Content-Type', JSON_CONTENT_TYPE);
  res.setHeader('Content-Length', Buffer.byteLength(json));
  res.end(json);
}

// A query parameter given once; repeated or absent is undefined (Express's parser makes a
// repeated one an array, which the handler ignores the same way).
function single(query: URLSearchParams | undefined, name: string): string | undefined {
  if (!query) return undefined;
  const all = query.getAll(name);
  return all.length === 1 ? all[0] : undefined;
}
