// The local edge: one URL (SETT_PORT) in front of the services, with the routes of
// ARCHITECTURE.md. Production uses nginx or an Ingress with the same table (deploy/nginx).
// Requests and responses are streamed, so capture still sees (and limits) the raw body. Every
// upstream status goes through unchanged, including an early answer such as capture's 413 sent
// before it read the body: the edge then stops sending the body upstream, relays the answer, and
// reads off (and drops) the rest of the client's body for a bounded time so the client, still
// sending, can read the answer instead of a reset connection.
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export type EdgeTarget = 'management' | 'capture' | 'decide';

const CAPTURE_PATHS = ['/i/v0/e', '/e', '/capture', '/track', '/batch', '/engage'];

/** SDK reads served by decide, matched with or without a trailing slash. */
const DECIDE_PATHS = [
  '/decide',
  '/flags',
  '/flags/definitions',
  '/api/feature_flag/local_evaluation',
  // The public token-authenticated lists: they win over the rest of /api/ (management).
  '/api/early_access_features',
  '/api/surveys',
  '/api/web_experiments',
  '/api/product_tours',
];

/** Whole subtrees served by decide: remote config and the posthog-js files. */
const DECIDE_PREFIXES = ['/array/', '/static/'];

export function routeFor(pathname: string): EdgeTarget | null {
  const trimmed = pathname.length > 1 && pathname.endsWith('/') ? pathname.slice(0, -1) : pathname;
  if (DECIDE_PATHS.includes(trimmed)) return 'decide';
  if (DECIDE_PREFIXES.some((prefix) => pathname.startsWith(prefix))) return 'decide';
  if (pathname === '/api' || pathname.startsWith('/api/')) return 'management';
  if (CAPTURE_PATHS.includes(trimmed)) return 'capture';
  return null;
}

export interface EdgeOptions {
  host: string;
  port: number;
  upstreams: Record<EdgeTarget, { host: string; port: number }>;
  /** How long the rest of a body the upstream did not want is read and dropped (default 10 s). */
  drainTimeoutMs?: number;
}

/** Connection-level headers a proxy does not pass on (RFC 9110 7.6.1). */
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'upgrade']);

function endToEnd(headers: http.IncomingHttpHeaders): http.OutgoingHttpHeaders {
  const out: http.OutgoingHttpHeaders = {};
  for (const [name, value] of Object.entries(headers)) if (!HOP_BY_HOP.has(name)) out[name] = value;
  return out;
}

export interface Edge {
  port: number;
  stop(): Promise<void>;
}

export async function startEdge(opts: EdgeOptions): Promise<Edge> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 256 });
  const server = http.createServer((req, res) => {
    const url = req.url ?? '/';
    const pathname = url.split('?')[0] ?? '/';
    if (pathname === '/_health') {
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"status":"ok","service":"edge"}');
      return;
    }
    const target = routeFor(pathname);
    if (!target) {
      res
        .writeHead(404, { 'content-type': 'application/json' })
        .end(
          JSON.stringify({ type: 'invalid_request', code: 'not_found', detail: 'Not found.', attr: null }),
        );
      return;
    }
    const upstream = opts.upstreams[target];
    const client = req.socket.remoteAddress ?? '';
    const forwarded = req.headers['x-forwarded-for'];
    let answered = false;
    const hasBody = req.headers['content-length'] !== undefined && req.headers['content-length'] !== '0';
    const proxied = http.request(
      {
        host: upstream.host,
        port: upstream.port,
        method: req.method,
        path: url,
        agent,
        headers: {
          ...req.headers,
          'x-forwarded-for': forwarded ? `${String(forwarded)}, ${client}` : client,
          'x-forwarded-proto': 'http',
          'x-forwarded-host': req.headers.host ?? '',
          // The upstream may refuse a body by its headers alone (capture's 413 on Content-Length);
          // waiting for its 100 Continue means no body is being written when such an answer comes.
          ...(hasBody ? { expect: '100-continue' } : {}),
        },
      },
      (up) => {
        answered = true;
        if (!req.complete) {
          // An early answer (413 before the body was read): stop sending the body upstream (that
          // connection is not reusable, so it is dropped once the answer is relayed) and drop the
          // client's remaining bytes here, for a bounded time, so it can read the answer.
          req.unpipe(proxied);
          up.once('end', () => proxied.destroy());
          req.resume();
          const timer = setTimeout(() => req.socket.destroy(), opts.drainTimeoutMs ?? 10_000);
          timer.unref();
          req.once('end', () => clearTimeout(timer));
          req.once('close', () => clearTimeout(timer));
        }
        up.once('aborted', () => res.destroy());
        up.once('error', () => res.destroy());
        res.writeHead(up.statusCode ?? 502, endToEnd(up.headers));
        up.pipe(res);
      },
    );
    proxied.on('error', () => {
      // After an early answer, the upstream closing while the body is still being sent is
      // expected: the answer is relayed regardless.
      if (answered) return;
      if (!res.headersSent) {
        res.writeHead(502, { 'content-type': 'application/json' }).end(
          JSON.stringify({
            type: 'server_error',
            code: 'bad_gateway',
            detail: `${target} is not answering.`,
            attr: null,
          }),
        );
      } else res.destroy();
    });
    if (!hasBody) {
      req.pipe(proxied);
    } else {
      let sending = false;
      const send = () => {
        clearTimeout(noContinue);
        if (sending || answered) return;
        sending = true;
        req.pipe(proxied);
      };
      // An upstream that ignores Expect gets the body anyway after a moment, as curl does.
      const noContinue = setTimeout(send, 1000);
      proxied.once('continue', send);
      proxied.once('close', () => clearTimeout(noContinue));
    }
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port, opts.host, resolve);
  });
  return {
    port: (server.address() as AddressInfo).port,
    stop: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
        agent.destroy();
      }),
  };
}
