// Prometheus metrics: one registry per service, default process metrics, and an HTTP request
// counter/histogram. Every label value comes from a fixed set, so no request can add a time
// series: `route` is the declared path of the route that answered (route-app.ts), and everything
// that matched no route (404s, malformed paths) shares `unmatched`; an unusual method is counted
// as `OTHER`.
import client from 'prom-client';
import { buildInfo } from '@sett/config';

export { client as prom };

/** The route label of every request that matched no route template. */
export const UNMATCHED_ROUTE = 'unmatched';

const METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);

export function methodLabel(method: string | undefined): string {
  return method !== undefined && METHODS.has(method) ? method : 'OTHER';
}

export interface BuildInfo {
  version: string;
  gitSha: string;
  nodeVersion: string;
}

/** The version of the running Sett (stamped at build, else the workspace package.json). */
export function settVersion(): string {
  return buildInfo().version;
}

export function createMetricsRegistry(service: string, build?: Partial<BuildInfo>): client.Registry {
  const registry = new client.Registry();
  registry.setDefaultLabels({ service });
  client.collectDefaultMetrics({ register: registry });
  // Prometheus' info-metric convention (like prometheus_build_info): a gauge fixed at 1 whose
  // labels carry the facts, joined onto other series with `* on(service) group_left(version)`.
  // `first` so a cluster primary summing its workers still reports 1, not the worker count.
  const info = new client.Gauge({
    name: 'sett_build_info',
    help: 'Always 1; the labels name the running Sett version, its git commit and the Node.js version',
    labelNames: ['version', 'git_sha', 'node_version'],
    aggregator: 'first',
    registers: [registry],
  });
  info.set(
    {
      version: build?.version ?? settVersion(),
      git_sha: build?.gitSha ?? buildInfo().gitSha,
      node_version: build?.nodeVersion ?? process.version,
    },
    1,
  );
  return registry;
}

/** Counts one answered request; `route` must be a template or UNMATCHED_ROUTE, never a raw path. */
export type HttpRequestObserver = (
  method: string | undefined,
  route: string,
  status: number,
  seconds: number,
) => void;

/** The HTTP request metrics of a registry, created on first use and shared by every caller
 * (the route mechanism's hooks and its raw fast paths). */
export function httpRequestObserver(registry: client.Registry): HttpRequestObserver {
  const requests =
    (registry.getSingleMetric('http_requests_total') as client.Counter | undefined) ??
    new client.Counter({
      name: 'http_requests_total',
      help: 'HTTP requests by route and status',
      labelNames: ['method', 'route', 'status'],
      registers: [registry],
    });
  const duration =
    (registry.getSingleMetric('http_request_duration_seconds') as client.Histogram | undefined) ??
    new client.Histogram({
      name: 'http_request_duration_seconds',
      help: 'HTTP request duration by route',
      labelNames: ['method', 'route'],
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers: [registry],
    });
  // Label objects are built once per method, route and status and reused (never mutated): a
  // request allocates none. Routes are templates and methods a fixed set, so this stays small.
  type Labels = {
    labels: { method: string; route: string };
    byStatus: Map<number, client.LabelValues<string>>;
  };
  const known = new Map<string, Map<string, Labels>>();
  const labelsOf = (method: string, route: string): Labels => {
    let byRoute = known.get(method);
    if (byRoute === undefined) known.set(method, (byRoute = new Map()));
    let entry = byRoute.get(route);
    if (entry === undefined) byRoute.set(route, (entry = { labels: { method, route }, byStatus: new Map() }));
    return entry;
  };
  return (method, route, status, seconds) => {
    const entry = labelsOf(methodLabel(method), route);
    let withStatus = entry.byStatus.get(status);
    if (withStatus === undefined)
      entry.byStatus.set(status, (withStatus = { ...entry.labels, status: String(status) }));
    requests.inc(withStatus);
    duration.observe(entry.labels, seconds);
  };
}
