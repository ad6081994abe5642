// The HTTP metrics' label values come from a fixed set: random paths, methods and preflights
// (over a loopback socket, no other dependency) add no time series.
import fc from 'fast-check';
import { createSilentLogger } from '@sett/logger';
import {
  AuthenticationError,
  createMetricsRegistry,
  createRouteApp,
  route,
  startService,
  type Authenticator,
  type RunningService,
} from '../src';

const registry = createMetricsRegistry('labels');
let svc: RunningService;
let base: string;

beforeAll(async () => {
  const r = route<Record<string, never>>();
  // Like management: every /api path needs a key, so a wrong method on one answers 401 first.
  const keys: Authenticator = {
    async authenticate(request) {
      if (!request.headers.authorization) throw new AuthenticationError();
      return {};
    },
    authorize() {},
  };
  const app = createRouteApp({
    name: 'labels',
    logger: createSilentLogger(),
    registry,
    readiness: {},
    deps: {},
    authenticators: { personal_key: keys },
    table: {
      service: 'management',
      routes: [
        r({
          method: 'GET',
          url: '/things/:id',
          summary: 's',
          tag: 't',
          auth: { kind: 'none' },
          schema: { params: { type: 'object', properties: { id: { type: 'string' } } } },
          handler: ({ params }) => ({ id: (params as { id: string }).id }),
        }),
        r({
          method: 'POST',
          url: '/echo',
          summary: 's',
          tag: 't',
          auth: { kind: 'none' },
          schema: { body: { type: 'object' } },
          handler: ({ body }) => body,
        }),
        r({
          method: 'POST',
          url: '/only-post',
          summary: 's',
          tag: 't',
          auth: { kind: 'none' },
          schema: {},
          handler: () => ({}),
        }),
        r({
          method: 'GET',
          url: '/api/things/',
          summary: 's',
          tag: 't',
          auth: { kind: 'personal_key', scope: null },
          schema: {},
          handler: () => ({}),
        }),
      ],
    },
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
  expect((await fetch(`${base}/api/things/`, { method: 'DELETE' })).status).toBe(401);
  before.routes.add('/api/things/');

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
        // Unknown paths are 404 under /api too (no route, so no credential to ask for); a
        // malformed percent-encoding is a 400.
        if (method !== 'OPTIONS' && method !== 'HEAD') expect([404, 400]).toContain(res.status);
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
  // Every one of them, preflights included, is counted once, under the one unmatched value.
  expect(unmatched).toBe(requests.length);
});
