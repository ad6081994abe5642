// The HTTP metrics' label values come from a fixed set: random paths, methods and preflights
// (over a loopback socket, no other dependency) add no time series.
import express from 'express';
import fc from 'fast-check';
import { createSilentLogger } from '@sett/logger';
import {
  AuthenticationError,
  corsMiddleware,
  createMetricsRegistry,
  createServiceApp,
  MethodNotAllowedError,
  startService,
  type RunningService,
} from '../src';

const registry = createMetricsRegistry('labels');
let svc: RunningService;
let base: string;

beforeAll(async () => {
  const routes = express.Router();
  // Like management: every /api path needs a key, known or not, so unknown ones answer 401.
  routes.use('/api', (req, _res, next) =>
    next(req.headers.authorization ? undefined : new AuthenticationError()),
  );
  routes.get('/things/:id', (req, res) => void res.json({ id: req.params.id }));
  routes.post('/echo', express.json({ limit: 1024 }), (req, res) => void res.json(req.body));
  routes.all('/only-post', (req) => {
    throw new MethodNotAllowedError(req.method, ['POST']);
  });
  const app = createServiceApp({
    name: 'labels',
    logger: createSilentLogger(),
    registry,
    before: [corsMiddleware()],
    readiness: {},
    routes,
  });
  svc = await startService({ name: 'labels', app, host: '127.0.0.1', port: 0, logger: createSilentLogger() });
  base = `http://127.0.0.1:${svc.port}`;
});

afterAll(() => svc.stop());

async function labelValues(name: string): Promise<Set<string>> {
  const metric = await registry.getSingleMetric('http_requests_total')!.get();
  return new Set(metric.values.map((v) => String(v.labels[name])));
}

it('labels only route templates; 1000 random unknown paths and methods share one value', async () => {
  // The known routes, including their error answers.
  expect((await fetch(`${base}/things/123`)).status).toBe(200);
  expect((await fetch(`${base}/things/456`)).status).toBe(200);
  expect(
    (
      await fetch(`${base}/echo`, {
        method: 'POST',
        body: '{nope',
        headers: { 'content-type': 'application/json' },
      })
    ).status,
  ).toBe(400);
  expect((await fetch(`${base}/only-post`, { method: 'GET' })).status).toBe(405);
  const before = { routes: await labelValues('route'), methods: await labelValues('method') };
  expect(before.routes).toEqual(new Set(['/things/:id', '/echo', '/only-post']));

  const segment = fc.stringMatching(/^[a-zA-Z0-9._~%-]{1,12}$/);
  const requests = fc.sample(
    fc.record({
      path: fc.array(segment, { minLength: 1, maxLength: 4 }).map((s) => `/${s.join('/')}`),
      method: fc.constantFrom(
        'GET',
        'POST',
        'PUT',
        'DELETE',
        'PATCH',
        'OPTIONS',
        'HEAD',
        'PROPFIND',
        'PURGE',
      ),
      preflight: fc.boolean(),
      prefix: fc.constantFrom('/zz', '/api'),
    }),
    { numRuns: 1000, seed: 42 },
  );
  let answered = 0;
  // Eight at a time over keep-alive connections.
  for (let i = 0; i < requests.length; i += 8) {
    await Promise.all(
      requests.slice(i, i + 8).map(async ({ path, method, preflight, prefix }) => {
        const res = await fetch(`${base}${prefix}${path}`, {
          method,
          headers: preflight ? { origin: 'https://x.test', 'access-control-request-method': 'POST' } : {},
        });
        await res.arrayBuffer();
        if (method !== 'OPTIONS') expect(res.status).toBe(prefix === '/api' ? 401 : 404);
        answered++;
      }),
    );
  }
  expect(answered).toBe(1000);

  const routes = await labelValues('route');
  expect(routes).toEqual(new Set([...before.routes, 'unmatched']));
  const methods = await labelValues('method');
  expect(
    [...methods].every((m) =>
      ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'OTHER'].includes(m),
    ),
  ).toBe(true);
  const metric = await registry.getSingleMetric('http_requests_total')!.get();
  const unmatched = metric.values
    .filter((v) => v.labels.route === 'unmatched')
    .reduce((n, v) => n + v.value, 0);
  // Preflights (every OPTIONS) end in the CORS middleware, before the metrics.
  expect(unmatched).toBe(requests.filter((r) => r.method !== 'OPTIONS').length);
});
