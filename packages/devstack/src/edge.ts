// The local edge: one URL (SETT_PORT) in front of the services, with the routes of
// ARCHITECTURE.md. Production uses nginx or an Ingress with the same table (deploy/nginx).
// Requests and responses are streamed, so capture still sees (and limits) the raw body.
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export type EdgeTarget = 'management' | 'capture' | 'decide';

const CAPTURE_PATHS = ['/i/v0/e', '/e', '/capture', '/track', '/batch', '/engage'];

export function routeFor(pathname: string): EdgeTarget | null {
  if (pathname === '/api' || pathname.startsWith('/api/')) return 'management';
  const trimmed = pathname.length > 1 && pathname.endsWith('/') ? pathname.slice(0, -1) : pathname;
  if (CAPTURE_PATHS.includes(trimmed)) return 'capture';
  if (trimmed === '/decide' || trimmed === '/flags') return 'decide';
  return null;
}

export interface EdgeOptions {
  host: string;
  port: number;
  upstreams: Record<EdgeTarget, { host: string; port: number }>;
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
        },
      },
      (up) => {
        res.writeHead(up.statusCode ?? 502, up.headers);
        up.pipe(res);
      },
    );
    proxied.on('error', () => {
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
    req.pipe(proxied);
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
