// The lifecycle every Sett HTTP service shares: /_health (alive), /_ready (dependencies
// reachable), /_metrics, one "ready" log line, and a graceful SIGTERM: stop accepting, let
// in-flight requests finish, then close the service's own resources.
import cluster from 'node:cluster';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import express, { type Express, type Router } from 'express';
import type client from 'prom-client';
import { buildInfo } from '@sett/config';
import type { Logger } from '@sett/logger';
import { clusterMetrics, shareMetricsWithPrimary } from './cluster';
import { errorMiddleware, notFoundHandler } from './error-middleware';
import { ServiceUnavailableError } from './errors';
import { httpMetricsMiddleware } from './metrics';
import { requestIdMiddleware } from './request-id';
import type { RouteApp } from './routes/route-app';

export type ReadinessCheck = () => Promise<void>;

export interface ServiceAppOptions {
  name: string;
  logger: Logger;
  registry: client.Registry;
  /** name -> check that throws when the dependency is unreachable */
  readiness: Record<string, ReadinessCheck>;
  /** The service's own routes, mounted after the operational ones. */
  routes: Router | Router[];
  /** Mounted before everything (e.g. CORS). */
  before?: express.RequestHandler[];
}

async function runChecks(checks: Record<string, ReadinessCheck>, timeoutMs = 2000) {
  const results: Record<string, { ok: boolean; error?: string }> = {};
  await Promise.all(
    Object.entries(checks).map(async ([name, check]) => {
      let timer: NodeJS.Timeout | undefined;
      try {
        await Promise.race([
          check(),
          new Promise((_, reject) => {
            timer = setTimeout(() => reject(new Error(`timed out after ${timeoutMs} ms`)), timeoutMs);
          }),
        ]);
        results[name] = { ok: true };
      } catch (err) {
        results[name] = { ok: false, error: (err as Error).message };
      } finally {
        clearTimeout(timer);
      }
    }),
  );
  return results;
}

export function createServiceApp(opts: ServiceAppOptions): Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.set('trust proxy', false);
  app.set('query parser', 'extended');
  // First, so every answer carries X-Request-Id and every log line of the request names it.
  app.use(requestIdMiddleware());
  for (const h of opts.before ?? []) app.use(h);
  const build = buildInfo();
  app.get('/_health', (_req, res) => {
    res.json({ status: 'ok', service: opts.name, version: build.version, git_sha: build.gitSha });
  });
  app.get('/_ready', async (_req, res) => {
    const checks = await runChecks(opts.readiness);
    const ready = Object.values(checks).every((c) => c.ok);
    res.status(ready ? 200 : 503).json({ status: ready ? 'ready' : 'not_ready', service: opts.name, checks });
  });
  // A cluster worker answers with every worker's metrics, summed by the primary (cluster.ts).
  shareMetricsWithPrimary(opts.registry);
  app.get('/_metrics', async (_req, res) => {
    let text: string;
    try {
      text = cluster.isWorker ? await clusterMetrics() : await opts.registry.metrics();
    } catch (err) {
      opts.logger.warn('could not collect metrics', { err: (err as Error).message });
      throw new ServiceUnavailableError('Metrics are not available, retry later.');
    }
    res.set('Content-Type', opts.registry.contentType).send(text);
  });
  app.use(httpMetricsMiddleware(opts.registry));
  if (opts.logger.isDebugEnabled()) {
    app.use((req, res, next) => {
      const start = Date.now();
      res.on('finish', () =>
        opts.logger.debug('request', {
          method: req.method,
          path: req.path,
          status: res.statusCode,
          ms: Date.now() - start,
        }),
      );
      next();
    });
  }
  for (const r of Array.isArray(opts.routes) ? opts.routes : [opts.routes]) app.use(r);
  app.use(notFoundHandler);
  app.use(errorMiddleware(opts.logger));
  return app;
}

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
  app: Express | http.RequestListener | RouteApp;
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
      for (const close of opts.closers ?? []) {
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
