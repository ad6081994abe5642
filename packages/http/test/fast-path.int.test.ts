// The shared request plumbing over a real socket, tested once for every service: the fast-path
// factory in front of an Express app, the body reader's limit (413 above it, the connection
// closed), and request ids (taken when safe, else generated, echoed, and on the request's log
// lines) on both the fast path and the Express app.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { PassThrough } from 'node:stream';
import express from 'express';
import { createLogger } from '@sett/logger';
import { createFastPath, createMetricsRegistry, createServiceApp, readBody } from '../src';

const LIMIT = 64;

describe('fast path, body reader and request ids', () => {
  let server: http.Server;
  let base: string;
  const lines: Array<Record<string, unknown>> = [];

  beforeAll(async () => {
    const stream = new PassThrough();
    stream.on('data', (chunk: Buffer) => {
      for (const l of chunk.toString().split('\n').filter(Boolean)) lines.push(JSON.parse(l));
    });
    const logger = createLogger({ stream, format: 'json', level: 'info' });
    const registry = createMetricsRegistry('test');
    const routes = express.Router();
    routes.get('/slow-log', async (_req, res) => {
      await new Promise((r) => setImmediate(r));
      logger.info('express line');
      res.json({ ok: true });
    });
    const fallback = createServiceApp({ name: 'test', logger, registry, readiness: {}, routes });
    const app = createFastPath<'echo'>({
      match: (req, path) => (req.method === 'POST' && path === '/echo' ? 'echo' : undefined),
      async handle(req, res, _route, requestId) {
        const body = await readBody(req, LIMIT);
        logger.info('fast line', { bytes: body.length });
        res.setHeader('Content-Type', 'application/json');
        res.end(JSON.stringify({ bytes: body.length, requestId }));
      },
      routeLabel: () => '/echo',
      fallback: fallback as unknown as http.RequestListener,
      logger,
      registry,
    });
    server = http.createServer(app);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  });

  const post = (body: string, headers: Record<string, string> = {}) =>
    fetch(`${base}/echo`, {
      method: 'POST',
      body,
      headers: { 'content-type': 'application/json', ...headers },
    });

  it('reads a body of exactly the limit and refuses one byte more with 413, closing the connection', async () => {
    const ok = await post('x'.repeat(LIMIT));
    expect(ok.status).toBe(200);
    expect(await ok.json()).toMatchObject({ bytes: LIMIT });
    const over = await post('x'.repeat(LIMIT + 1));
    expect(over.status).toBe(413);
    expect(over.headers.get('connection')).toBe('close');
    expect(await over.json()).toEqual({
      type: 'invalid_request',
      code: 'payload_too_large',
      detail: `Request body must be at most ${LIMIT} bytes.`,
      attr: null,
    });
  });

  it('refuses a streamed body (no Content-Length) once it passes the limit, without waiting for its end', async () => {
    const status = await new Promise<number>((resolve, reject) => {
      const req = http.request(
        `${base}/echo`,
        { method: 'POST', headers: { 'transfer-encoding': 'chunked' } },
        (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
          req.destroy();
        },
      );
      req.on('error', (e) => (req.destroyed ? undefined : reject(e)));
      req.write('x'.repeat(LIMIT + 1));
    });
    expect(status).toBe(413);
  });

  it('echoes a safe request id and puts it on the request’s log lines', async () => {
    lines.length = 0;
    const res = await post('{}', { 'x-request-id': 'lb-1234.abcd:5' });
    expect(res.headers.get('x-request-id')).toBe('lb-1234.abcd:5');
    expect(await res.json()).toMatchObject({ requestId: 'lb-1234.abcd:5' });
    expect(lines.find((l) => l.message === 'fast line')).toMatchObject({ request_id: 'lb-1234.abcd:5' });
  });

  it.each([
    ['too long', 'a'.repeat(129)],
    ['unsafe characters', 'id with spaces'],
    ['a newline escape', 'abc%0d%0aSet-Cookie:x'],
  ])('replaces a request id with %s by a fresh UUID', async (_name, given) => {
    const res = await post('{}', { 'x-request-id': given });
    expect(res.headers.get('x-request-id')).toMatch(
      /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[0-9a-f]{4}-[0-9a-f]{12}$/,
    );
  });

  it('gives each request without one its own id, on the fast path and through Express alike', async () => {
    lines.length = 0;
    const [a, b] = await Promise.all([fetch(`${base}/slow-log`), fetch(`${base}/slow-log`)]);
    const ids = [a.headers.get('x-request-id'), b.headers.get('x-request-id')];
    expect(ids[0]).toMatch(/^[0-9a-f-]{36}$/);
    expect(ids[0]).not.toBe(ids[1]);
    const logged = lines.filter((l) => l.message === 'express line').map((l) => l.request_id);
    expect(logged.sort()).toEqual([...ids].sort());
    const fast = await post('{}');
    expect(fast.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('leaves what the fast path does not claim to the fallback, errors included', async () => {
    const res = await fetch(`${base}/nope`);
    expect(res.status).toBe(404);
    expect(res.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
  });
});
