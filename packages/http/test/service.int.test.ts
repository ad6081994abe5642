// The shared service shell over a real socket (startService serving a route table): operational
// routes, error mapping, draining.
import { createSilentLogger } from '@sett/logger';
import { buildInfo } from '@sett/config';
import {
  createMetricsRegistry,
  createRouteApp,
  ForbiddenError,
  route,
  startService,
  ValidationError,
  type RunningService,
} from '../src';

const r = route<Record<string, never>>();
const get = (url: string, handler: (ctx: { params: Record<string, string> }) => unknown) =>
  r({
    method: 'GET',
    url,
    summary: url,
    tag: 't',
    auth: { kind: 'none' },
    schema: {},
    handler: (ctx) => handler(ctx as { params: Record<string, string> }),
  });

describe('service shell', () => {
  let svc: RunningService;
  let base: string;
  let dependencyUp = true;
  let release: () => void = () => undefined;
  // Resolved when /slow has the request in hand, so the stop below lands while it is in flight.
  let arrived: () => void = () => undefined;

  beforeAll(async () => {
    const app = createRouteApp({
      name: 'test',
      logger: createSilentLogger(),
      registry: createMetricsRegistry('test'),
      jsonBodyLimit: 1024,
      readiness: {
        dep: async () => {
          if (!dependencyUp) throw new Error('dep down');
        },
      },
      deps: {},
      table: {
        service: 'management',
        routes: [
          r({
            method: 'POST',
            url: '/echo',
            summary: 'echo',
            tag: 't',
            auth: { kind: 'none' },
            schema: { body: { type: 'object' } },
            handler: ({ body }) => body,
          }),
          get('/invalid', () => {
            throw new ValidationError('name is required.', 'name');
          }),
          get('/forbidden', () => {
            throw new ForbiddenError("API key missing required scope 'user:read'");
          }),
          get('/things/:id', ({ params }) => ({ id: params.id })),
          get('/boom', () => {
            throw new Error('secret internals');
          }),
          get(
            '/slow',
            () =>
              new Promise((resolve) => {
                arrived();
                release = () => resolve({ done: true });
              }),
          ),
        ],
      },
    });
    svc = await startService({ name: 'test', app, host: '127.0.0.1', port: 0, logger: createSilentLogger() });
    base = `http://127.0.0.1:${svc.port}`;
  });

  afterAll(() => svc.stop());

  it('answers health and readiness with JSON', async () => {
    const health = await fetch(`${base}/_health`);
    expect(health.status).toBe(200);
    expect(await health.json()).toEqual({
      status: 'ok',
      service: 'test',
      version: buildInfo().version,
      git_sha: buildInfo().gitSha,
    });
    expect((await fetch(`${base}/_ready`)).status).toBe(200);
    dependencyUp = false;
    const notReady = await fetch(`${base}/_ready`);
    expect(notReady.status).toBe(503);
    expect(await notReady.json()).toMatchObject({
      status: 'not_ready',
      checks: { dep: { ok: false, error: 'dep down' } },
    });
    dependencyUp = true;
  });

  it('maps errors to PostHog-style bodies', async () => {
    const bad = await fetch(`${base}/invalid`);
    expect(bad.status).toBe(400);
    expect(await bad.json()).toEqual({
      type: 'validation_error',
      code: 'invalid_input',
      detail: 'name is required.',
      attr: 'name',
    });
    const forbidden = await fetch(`${base}/forbidden`);
    expect(forbidden.status).toBe(403);
    expect(((await forbidden.json()) as { code: string }).code).toBe('permission_denied');
    const missing = await fetch(`${base}/nope`);
    expect(missing.status).toBe(404);
    expect(await missing.json()).toMatchObject({ type: 'invalid_request', code: 'not_found' });
    const malformed = await fetch(`${base}/echo`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"a":',
    });
    expect(malformed.status).toBe(400);
    const big = await fetch(`${base}/echo`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ a: 'x'.repeat(5000) }),
    });
    expect(big.status).toBe(413);
  });

  it('answers 400 to malformed percent-encoding in a path parameter', async () => {
    expect(await (await fetch(`${base}/things/a%20b`)).json()).toEqual({ id: 'a b' });
    const res = await fetch(`${base}/things/%E0%A4%A`);
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ type: 'validation_error', code: 'invalid_path', attr: 'path' });
  });

  it('hides internals of unexpected errors behind an error id', async () => {
    const res = await fetch(`${base}/boom`);
    expect(res.status).toBe(500);
    const body = (await res.json()) as { error_id: string };
    expect(body).toMatchObject({ type: 'server_error', code: 'error' });
    expect(body.error_id).toMatch(/^[0-9a-f-]{36}$/);
    expect(JSON.stringify(body)).not.toContain('secret internals');
  });

  it('exposes Prometheus metrics by route', async () => {
    const text = await (await fetch(`${base}/_metrics`)).text();
    expect(text).toMatch(/http_requests_total\{[^}]*route="\/invalid"[^}]*status="400"/);
  });

  it('finishes in-flight requests when stopping', async () => {
    const inHandler = new Promise<void>((resolve) => (arrived = resolve));
    const pending = fetch(`${base}/slow`).then((r) => r.json());
    await inHandler;
    const stopped = svc.stop();
    release();
    await expect(pending).resolves.toEqual({ done: true });
    await stopped;
    await expect(fetch(`${base}/_health`)).rejects.toThrow();
  });
});
