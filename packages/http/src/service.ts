// The lifecycle every Sett HTTP service shares: the server with its timeouts, one "ready" log
// line, and a graceful SIGTERM: stop accepting, let in-flight requests finish, then close the
// service's own resources. The routes, /_health, /_ready and /_metrics come from the service's
// route table (routes/route-app.ts).
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from '@sett/logger';
import type { RouteApp } from './routes/route-app';

export type ReadinessCheck = () => Promise<void>;

export interface RunningService {
  server: http.Server;
  port: number;
  /** Stop accepting, wait for in-flight requests, then run the closers. Idempotent. */
  stop(): Promise<void>;
}

/** Socket deadlines of a service (HTTP_HEADERS_TIMEOUT_MS and friends, docs/hardening.md). */
export interface ServerTimeouts {
  /** The request head must arrive within this (slow-header clients). */
  headersMs: number;
  /** The whole request, head and body, must arrive within this (slow-body clients). */
  requestMs: number;
  /** An idle keep-alive connection is closed after this. */
  keepAliveMs: number;
}

/** The socket deadlines of a service's configuration (HTTP_*_TIMEOUT_MS). */
export function serverTimeouts(config: {
  http: { headersTimeoutMs: number; requestTimeoutMs: number; keepAliveTimeoutMs: number };
}): ServerTimeouts {
  return {
    headersMs: config.http.headersTimeoutMs,
    requestMs: config.http.requestTimeoutMs,
    keepAliveMs: config.http.keepAliveTimeoutMs,
  };
}

export const DEFAULT_SERVER_TIMEOUTS: ServerTimeouts = {
  headersMs: 10_000,
  requestMs: 60_000,
  keepAliveMs: 65_000,
};

export interface StartOptions {
  name: string;
  app: http.RequestListener | RouteApp;
  timeouts?: ServerTimeouts;
  host: string;
  port: number;
  logger: Logger;
  /** Closed in order after the HTTP server has drained (producers flush here). */
  closers?: Array<() => Promise<void>>;
  shutdownTimeoutMs?: number;
  /** Register SIGTERM/SIGINT handlers that stop and exit (main.ts); tests leave it off. */
  handleSignals?: boolean;
  extra?: Record<string, unknown>;
}

function isRouteApp(app: StartOptions['app']): app is RouteApp {
  return typeof app === 'object' && app !== null && 'listener' in app && 'fastify' in app;
}

export async function startService(opts: StartOptions): Promise<RunningService> {
  let listener: http.RequestListener;
  if (isRouteApp(opts.app)) {
    await opts.app.ready();
    listener = opts.app.listener;
  } else listener = opts.app as http.RequestListener;
  const timeouts = opts.timeouts ?? DEFAULT_SERVER_TIMEOUTS;
  const server = http.createServer(
    {
      headersTimeout: timeouts.headersMs,
      requestTimeout: timeouts.requestMs,
      keepAliveTimeout: timeouts.keepAliveMs,
      // Node checks the two deadlines above on this interval (default 30 s).
      connectionsCheckingInterval: Math.min(1_000, timeouts.headersMs),
    },
    listener,
  );
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port, opts.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  opts.logger.info(`${opts.name} ready`, { host: opts.host, port, ...opts.extra });

  let stopping: Promise<void> | undefined;
  const stop = () => {
    stopping ??= (async () => {
      opts.logger.info(`${opts.name} stopping`);
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      // Connections of in-flight requests turn idle once answered; close them as they do so
      // that keep-alive clients cannot hold the shutdown open.
      server.closeIdleConnections();
      const reaper = setInterval(() => server.closeIdleConnections(), 50);
      const timeout = opts.shutdownTimeoutMs ?? 25_000;
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([closed, new Promise<void>((r) => (timer = setTimeout(r, timeout)))]);
      clearTimeout(timer);
      clearInterval(reaper);
      server.closeAllConnections();
      const closers = [...(isRouteApp(opts.app) ? [opts.app.close] : []), ...(opts.closers ?? [])];
      for (const close of closers) {
        try {
          await close();
        } catch (err) {
          opts.logger.error('error while stopping', { err });
        }
      }
      opts.logger.info(`${opts.name} stopped`);
    })();
    return stopping;
  };

  if (opts.handleSignals) {
    const onSignal = (signal: string) => {
      opts.logger.info(`received ${signal}`);
      stop().then(
        () => process.exit(0),
        () => process.exit(1),
      );
    };
    process.once('SIGTERM', () => onSignal('SIGTERM'));
    process.once('SIGINT', () => onSignal('SIGINT'));
  }
  return { server, port, stop };
}
