// /static/: the pinned posthog-js bundles over real HTTP (decide's static routes from its route
// table, with the mechanism's CORS): content types, caching, ETag revalidation, gzip, and that no request path can
// name a file outside the precomputed map.
import { request as httpRequest } from 'node:http';
import { gunzipSync } from 'node:zlib';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { createMetricsRegistry, createRouteApp, startService, type RunningService } from '@sett/http';
import { createSilentLogger } from '@sett/logger';
import { loadSdkFiles, posthogJsDistDir } from '../src/static/sdk-files';
import {
  IMMUTABLE_CACHE,
  UNVERSIONED_CACHE,
  acceptsGzip,
  matchesEtag,
  createStaticFiles,
} from '../src/static/static-routes';
import { decideRoutes, type DecideRouteDeps } from '../src/routes';

const files = loadSdkFiles();
const dist = posthogJsDistDir();
let service: RunningService;

beforeAll(async () => {
  const logger = createSilentLogger();
  const app = createRouteApp({
    name: 'decide',
    logger,
    registry: createMetricsRegistry('decide'),
    readiness: {},
    table: { service: 'decide', routes: decideRoutes.routes.filter((r) => r.url.startsWith('/static/')) },
    deps: { staticFiles: createStaticFiles(files) } as DecideRouteDeps,
  });
  service = await startService({
    name: 'decide',
    app,
    host: '127.0.0.1',
    port: 0,
    logger,
    shutdownTimeoutMs: 1000,
  });
});
afterAll(() => service.stop());

/** Raw request: fetch would normalise `..` and encoded paths before sending them. */
function raw(
  rawPath: string,
  opts: { method?: string; headers?: Record<string, string> } = {},
): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      {
        host: '127.0.0.1',
        port: service.port,
        path: rawPath,
        method: opts.method ?? 'GET',
        headers: opts.headers,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }),
        );
      },
    );
    req.on('error', reject);
    req.end();
  });
}

describe('the files served', () => {
  it('is posthog-js 1.449.2, pinned in package.json', () => {
    expect(files.version).toBe('1.449.2');
    const pkg = JSON.parse(readFileSync(path.join(__dirname, '..', 'package.json'), 'utf8'));
    expect(pkg.dependencies['posthog-js']).toBe('1.449.2');
  });

  it('holds every browser bundle of the package (its integrity.json) and their source maps', () => {
    const integrity = JSON.parse(readFileSync(path.join(dist, 'integrity.json'), 'utf8')) as {
      files: Record<string, string>;
    };
    const bundles = Object.keys(integrity.files).filter((n) => n.endsWith('.js'));
    for (const name of bundles) expect(files.get(name)).toBeDefined();
    // What the snippet and the SDK's lazy loader ask for.
    for (const name of [
      'array.js',
      'array.full.js',
      'lazy-recorder.js',
      'recorder.js',
      'posthog-recorder.js',
      'surveys.js',
      'exception-autocapture.js',
      'web-vitals.js',
      'dead-clicks-autocapture.js',
      'tracing-headers.js',
      'product-tours.js',
      'conversations.js',
      'logs.js',
      'array.js.map',
    ])
      expect(files.names()).toContain(name);
    expect(files.names().some((n) => n.endsWith('.d.ts') || n.endsWith('.json'))).toBe(false);
  });
});

describe('GET /static/<file>', () => {
  it('serves array.js byte for byte with a script type, CORS for any origin, a day of cache and an ETag', async () => {
    const res = await raw('/static/array.js', { headers: { origin: 'https://shop.example' } });
    expect(res.status).toBe(200);
    expect(res.body.equals(readFileSync(path.join(dist, 'array.js')))).toBe(true);
    expect(res.headers['content-type']).toBe('application/javascript; charset=utf-8');
    expect(res.headers['access-control-allow-origin']).toBe('*');
    expect(res.headers['access-control-allow-credentials']).toBeUndefined();
    expect(res.headers['cache-control']).toBe(UNVERSIONED_CACHE);
    expect(res.headers['x-content-type-options']).toBe('nosniff');
    expect(res.headers.etag).toMatch(/^"[^"]+"$/);
    expect(res.headers['content-encoding']).toBeUndefined();
  });

  it('caches a lazily loaded bundle for a year when the URL names the pinned version', async () => {
    const res = await raw('/static/surveys.js?v=1.449.2');
    expect(res.status).toBe(200);
    expect(res.headers['cache-control']).toBe(IMMUTABLE_CACHE);
    const other = await raw('/static/surveys.js?v=1.300.0');
    expect(other.headers['cache-control']).toBe(UNVERSIONED_CACHE);
  });

  it('serves /static/<pinned version>/<name> (posthog-js strict script versioning) and /static/<major>/<name>', async () => {
    const pinned = await raw('/static/1.449.2/surveys.js');
    expect(pinned.status).toBe(200);
    expect(pinned.headers['cache-control']).toBe(IMMUTABLE_CACHE);
    expect(pinned.body.equals(readFileSync(path.join(dist, 'surveys.js')))).toBe(true);
    const major = await raw('/static/1/array.js');
    expect(major.status).toBe(200);
    expect(major.headers['cache-control']).toBe(UNVERSIONED_CACHE);
    expect(major.headers['access-control-allow-origin']).toBe('*');
    // Another version's bundle is not ours to serve: the SDK falls back to the plain path.
    expect((await raw('/static/1.300.0/surveys.js')).status).toBe(404);
    expect((await raw('/static/2/array.js')).status).toBe(404);
    expect((await raw('/static/1.449.2/..%2fpackage.json')).status).toBe(404);
  });

  it('answers If-None-Match with 304 and no body', async () => {
    const first = await raw('/static/recorder.js');
    const etag = first.headers.etag as string;
    const again = await raw('/static/recorder.js', { headers: { 'if-none-match': `W/${etag}, "other"` } });
    expect(again.status).toBe(304);
    expect(again.body.length).toBe(0);
    expect(again.headers.etag).toBe(etag);
    const changed = await raw('/static/recorder.js', { headers: { 'if-none-match': '"stale"' } });
    expect(changed.status).toBe(200);
  });

  it('sends gzip when asked, with its own ETag that also revalidates', async () => {
    const res = await raw('/static/array.full.js', { headers: { 'accept-encoding': 'gzip, br' } });
    expect(res.status).toBe(200);
    expect(res.headers['content-encoding']).toBe('gzip');
    expect(res.headers.vary).toBe('Accept-Encoding');
    expect(gunzipSync(res.body).equals(readFileSync(path.join(dist, 'array.full.js')))).toBe(true);
    expect(res.body.length).toBeLessThan(readFileSync(path.join(dist, 'array.full.js')).length / 2);
    const again = await raw('/static/array.full.js', {
      headers: { 'accept-encoding': 'gzip', 'if-none-match': res.headers.etag as string },
    });
    expect(again.status).toBe(304);
  });

  it('serves source maps as JSON', async () => {
    const res = await raw('/static/array.js.map');
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(JSON.parse(res.body.toString('utf8')).version).toBe(3);
  });

  it('answers HEAD with the headers only', async () => {
    const res = await raw('/static/array.js', { method: 'HEAD' });
    expect(res.status).toBe(200);
    expect(res.body.length).toBe(0);
    expect(Number(res.headers['content-length'])).toBe(files.get('array.js')!.size);
  });

  it('refuses other methods with 405', async () => {
    const res = await raw('/static/array.js', { method: 'POST' });
    expect(res.status).toBe(405);
  });

  it.each([
    '/static/../package.json',
    '/static/..%2fpackage.json',
    '/static/%2e%2e%2fpackage.json',
    '/static/..%2F..%2F..%2Fpackage.json',
    '/static/src%2fentrypoints%2farray.d.ts',
    '/static/array.js%00.map',
    '/static/array.js%00',
    '/static/..%5cpackage.json',
    '/static/integrity.json',
    '/static/array.d.ts',
    '/static/module.mjs',
    '/static/ARRAY.JS',
    '/static/toolbar.js',
    '/static/',
    '/static/dist/array.js',
    '/static/.array.js',
  ])('%s is not served', async (p) => {
    const res = await raw(p);
    expect([400, 404]).toContain(res.status);
    expect(res.body.toString('utf8')).not.toContain('posthog');
  });
});

describe('header helpers', () => {
  it('accepts gzip only with a non-zero quality', () => {
    expect(acceptsGzip('gzip, deflate, br')).toBe(true);
    expect(acceptsGzip('br;q=1, gzip;q=0.5')).toBe(true);
    expect(acceptsGzip('gzip;q=0')).toBe(false);
    expect(acceptsGzip('identity')).toBe(false);
    expect(acceptsGzip(undefined)).toBe(false);
  });

  it('matches ETags weakly, and *', () => {
    expect(matchesEtag('W/"a", "b"', ['"a"'])).toBe(true);
    expect(matchesEtag('*', ['"a"'])).toBe(true);
    expect(matchesEtag('"c"', ['"a"', '"b"'])).toBe(false);
  });
});
