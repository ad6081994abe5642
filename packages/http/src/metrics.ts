// Prometheus metrics: one registry per service, default process metrics, and an HTTP request
// counter/histogram labelled by route (the express route pattern, not the raw URL).
import client from 'prom-client';
import type { RequestHandler } from 'express';

export { client as prom };

export function createMetricsRegistry(service: string): client.Registry {
  const registry = new client.Registry();
  registry.setDefaultLabels({ service });
  client.collectDefaultMetrics({ register: registry });
  return registry;
}

export function httpMetricsMiddleware(registry: client.Registry): RequestHandler {
  const requests = new client.Counter({
    name: 'http_requests_total',
    help: 'HTTP requests by route and status',
    labelNames: ['method', 'route', 'status'],
    registers: [registry],
  });
  const duration = new client.Histogram({
    name: 'http_request_duration_seconds',
    help: 'HTTP request duration by route',
    labelNames: ['method', 'route'],
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [registry],
  });
  return (req, res, next) => {
    const start = process.hrtime.bigint();
    res.on('finish', () => {
      const route =
        (req.route?.path as string | undefined) ?? (res.statusCode === 404 ? 'unmatched' : req.path);
      const labels = { method: req.method, route: String(route) };
      requests.inc({ ...labels, status: String(res.statusCode) });
      duration.observe(labels, Number(process.hrtime.bigint() - start) / 1e9);
    });
    next();
  };
}
