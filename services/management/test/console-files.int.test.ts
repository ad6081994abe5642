// The console's files as management serves them: the page with its security headers and no
// caching, hashed assets cached for good and gzipped when asked, ETag revalidation, and nothing
// but the files that were built (no path reaches the file system); without a build, a 404 that
// says how to build it.
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { gunzipSync } from 'node:zlib';
import { startHarness, type Harness } from './helpers';

let built: Harness;
let bare: Harness;
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sett-console-'));

beforeAll(async () => {
  fs.mkdirSync(path.join(dir, 'assets'));
  fs.writeFileSync(
    path.join(dir, 'index.html'),
    '<!doctype html><script src="/assets/app-1a2b.js"></script>',
  );
  fs.writeFileSync(
    path.join(dir, 'assets', 'app-1a2b.js'),
    `console.log(${JSON.stringify('x'.repeat(5000))});`,
  );
  fs.writeFileSync(path.join(dir, 'secret.txt'), 'not an asset');
  [built, bare] = await Promise.all([
    startHarness({ consoleDir: dir }),
    startHarness({ consoleDir: path.join(dir, 'nowhere') }),
  ]);
});
afterAll(async () => {
  await Promise.all([built.stop(), bare.stop()]);
  fs.rmSync(dir, { recursive: true, force: true });
});

it('serves the page with its security headers, never cached without revalidation', async () => {
  const r = await fetch(`${built.url}/`);
  expect(r.status).toBe(200);
  expect(r.headers.get('content-type')).toBe('text/html; charset=utf-8');
  expect(r.headers.get('cache-control')).toBe('no-cache');
  expect(r.headers.get('content-security-policy')).toMatch(/default-src 'self'.*frame-ancestors 'none'/);
  expect(r.headers.get('x-frame-options')).toBe('DENY');
  expect(await r.text()).toMatch(/app-1a2b\.js/);
  const again = await fetch(`${built.url}/`, { headers: { 'if-none-match': r.headers.get('etag')! } });
  expect(again.status).toBe(304);
});

it('serves hashed assets for good, gzipped when the client takes it', async () => {
  const res = await new Promise<{ status: number; headers: Record<string, string>; body: Buffer }>(
    (resolve, reject) => {
      // node:http, not fetch: the gzipped bytes as they come on the wire.
      const req = http.get(
        `${built.url}/assets/app-1a2b.js`,
        { headers: { 'accept-encoding': 'gzip' } },
        (m) => {
          const chunks: Buffer[] = [];
          m.on('data', (c: Buffer) => chunks.push(c));
          m.on('end', () =>
            resolve({
              status: m.statusCode!,
              headers: m.headers as Record<string, string>,
              body: Buffer.concat(chunks),
            }),
          );
        },
      );
      req.on('error', reject);
    },
  );
  expect(res.status).toBe(200);
  expect(res.headers['cache-control']).toBe('public, max-age=31536000, immutable');
  expect(res.headers['content-encoding']).toBe('gzip');
  expect(res.headers['content-type']).toBe('text/javascript; charset=utf-8');
  expect(res.body.length).toBeLessThan(200);
  expect(gunzipSync(res.body).toString()).toMatch(/^console\.log/);
});

it('serves nothing but the built files', async () => {
  for (const p of [
    '/assets/missing.js',
    '/assets/..%2Fsecret.txt',
    '/assets/%2e%2e%2findex.html',
    '/secret.txt',
  ])
    expect((await fetch(`${built.url}${p}`)).status).toBe(404);
});

it('says how to build it when it is not built', async () => {
  const r = await fetch(`${bare.url}/`);
  expect(r.status).toBe(404);
  expect(((await r.json()) as { detail: string }).detail).toMatch(/console is not built/);
});
