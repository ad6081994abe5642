// The web console at `/` (apps/console): its page and its hashed assets, served by management
// so that the console is same-origin with the API it calls (its session cookie and CSRF token
// need nothing more). Declared here like every route, so the edge configurations route `/` and
// `/assets/` to management by the same derivation as the API.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { NotFoundError } from '@sett/http';
import { r } from '../route-kit';
import type { ConsoleFile } from './console-files';

// The page loads only its own scripts and styles, talks only to its own origin, and is never
// framed (clickjacking).
const PAGE_HEADERS: Record<string, string> = {
  'Content-Security-Policy':
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
  'X-Frame-Options': 'DENY',
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'same-origin',
};

function send(req: IncomingMessage, res: ServerResponse, file: ConsoleFile, cache: string, extra = {}) {
  for (const [k, v] of Object.entries({
    ...extra,
    'Cache-Control': cache,
    ETag: file.etag,
    Vary: 'Accept-Encoding',
  }))
    res.setHeader(k, v);
  res.setHeader('X-Content-Type-Options', 'nosniff');
  if (req.headers['if-none-match'] === file.etag) {
    res.statusCode = 304;
    res.end();
    return;
  }
  const gzip = /\bgzip\b/.test(String(req.headers['accept-encoding'] ?? ''));
  const body = gzip ? file.gzipped : file.body;
  res.setHeader('Content-Type', file.contentType);
  if (gzip) res.setHeader('Content-Encoding', 'gzip');
  res.setHeader('Content-Length', String(body.length));
  res.statusCode = 200;
  res.end(req.method === 'HEAD' ? undefined : body);
}

const NOT_BUILT =
  'The console is not built: `npm start` builds it, or run `pnpm --filter @sett/console build` (docs/console.md).';

export const consoleRoutes = [
  r({
    method: 'GET',
    url: '/',
    summary: 'The web console (sign in, then the pages)',
    tag: 'console',
    compat: { posthog: 'sett-only' },
    auth: { kind: 'none' },
    schema: { querystring: { type: 'object', additionalProperties: true } },
    handler: async ({ request, reply }, d) => {
      if (!d.console.index) throw new NotFoundError(NOT_BUILT);
      send(request.raw, reply.raw, d.console.index, 'no-cache', PAGE_HEADERS);
    },
  }),
  r({
    method: 'GET',
    url: '/assets/:name',
    summary: "The console's scripts and styles (named by their content: cached for good)",
    tag: 'console',
    compat: { posthog: 'sett-only' },
    auth: { kind: 'none' },
    schema: {
      params: {
        type: 'object',
        required: ['name'],
        properties: { name: { type: 'string', maxLength: 200 } },
      },
    },
    handler: async ({ params, request, reply }, d) => {
      const file = d.console.asset(params.name);
      if (!file) throw new NotFoundError();
      send(request.raw, reply.raw, file, 'public, max-age=31536000, immutable');
    },
  }),
];
