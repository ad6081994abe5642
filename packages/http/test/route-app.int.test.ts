// The route mechanism over a real socket, on a small table: what every service gets from one
// declaration (405 with Allow, preflights, auth before the body, scope, validation naming the
// field or query parameter, unknown query parameters refused, JSON body limits and types, CORS
// without credentials, metrics by route template, the access log, response checks, errors).
import net from 'node:net';
import { buildInfo } from '@sett/config';
import { PassThrough } from 'node:stream';
import { createLogger } from '@sett/logger';
import { waitFor } from '@sett/testing';
import { notServed } from '@sett/schemas';
import {
  AuthenticationError,
  createMetricsRegistry,
  createRouteApp,
  ConflictError,
  ForbiddenError,
  isUpload,
  NotFoundError,
  readBody,
  route,
  SerializedJson,
  startService,
  type Authenticator,
  type RouteTable,
  type RunningService,
} from '../src';

interface Deps {
  things: Map<number, { id: number; name: string }>;
  /** The fields of the last body a handler saw. */
  seen?: string[];
}
interface Caller {
  user: string;
  scopes: string[];
}

const r = route<Deps, Caller>();
const thing = {
  type: 'object',
  required: ['id', 'name'],
  properties: { id: { type: 'integer' }, name: { type: 'string' } },
  additionalProperties: false,
} as const;

const table: RouteTable<Deps> = {
  service: 'management',
  routes: [
    r({
      method: 'GET',
      url: '/api/things/',
      summary: 'List things',
      tag: 'things',
      auth: { kind: 'personal_key', scope: 'thing:read' },
      schema: {
        querystring: {
          type: 'object',
          properties: { limit: { type: 'integer', minimum: 1, maximum: 10 }, search: { type: 'string' } },
        },
        response: { 200: { type: 'object', properties: { results: { type: 'array', items: thing } } } },
      },
      handler: ({ query }, deps) => {
        const all = [...deps.things.values()].filter((t) => !query.search || t.name.includes(query.search));
        return { results: all.slice(0, query.limit ?? 10) };
      },
    }),
    r({
      method: 'POST',
      url: '/api/things/',
      summary: 'Create a thing',
      tag: 'things',
      status: 201,
      auth: { kind: 'personal_key', scope: 'thing:write' },
      schema: {
        body: {
          type: 'object',
          required: ['name'],
          properties: {
            name: { type: 'string', minLength: 1 },
            tags: {
              type: 'array',
              items: { type: 'object', properties: { key: { type: 'string' } }, additionalProperties: false },
            },
          },
          additionalProperties: false,
        },
        response: { 201: thing },
      },
      handler: ({ body }, deps) => {
        deps.seen = Object.keys(body);
        const t = { id: deps.things.size + 1, name: body.name };
        deps.things.set(t.id, t);
        return t;
      },
    }),
    r({
      method: 'POST',
      url: '/api/strict-things/',
      summary: 'Check a thing, refusing what it does not know',
      tag: 'things',
      unknownBodyFields: 'refuse',
      auth: { kind: 'personal_key', scope: 'thing:write' },
      schema: {
        body: {
          type: 'object',
          properties: { name: { type: 'string' }, colour: notServed('things have no colour') },
          additionalProperties: false,
        },
        response: { 200: { type: 'object' } },
      },
      handler: () => ({}),
    }),
    r({
      method: 'GET',
      url: '/api/things/:id/',
      summary: 'One thing',
      tag: 'things',
      auth: { kind: 'personal_key', scope: 'thing:read' },
      schema: {
        params: { type: 'object', properties: { id: { type: 'integer', minimum: 1 } }, required: ['id'] },
        response: { 200: thing },
      },
      handler: ({ params }, deps) => {
        const t = deps.things.get(params.id);
        if (!t) throw new NotFoundError();
        return t;
      },
    }),
    r({
      method: 'DELETE',
      url: '/api/things/:id/',
      summary: 'Delete a thing',
      tag: 'things',
      status: 204,
      auth: { kind: 'personal_key', scope: 'thing:write' },
      schema: { params: { type: 'object', properties: { id: { type: 'integer' } } } },
      handler: ({ params }, deps) => {
        deps.things.delete(params.id ?? 0);
      },
    }),
    r({
      method: 'GET',
      url: '/api/wrong-shape/',
      summary: 'Answers something its schema does not allow',
      tag: 'things',
      auth: { kind: 'none' },
      schema: { response: { 200: thing } },
      handler: () => ({ id: 'not a number' }),
    }),
    r({
      method: 'POST',
      url: '/api/uploads/',
      summary: 'JSON or a form',
      tag: 'things',
      auth: { kind: 'none' },
      body: 'upload',
      schema: {
        body: { type: 'object', required: ['name'], properties: { name: { type: 'string' } } },
        rawBody: { type: 'object', properties: { file: { type: 'string' } } },
      },
      handler: async ({ body, request }) => {
        if (!isUpload(request)) return { json: body };
        return { formBytes: (await readBody(request.raw, 10_000)).length };
      },
    }),
    r({
      method: 'GET',
      url: '/api/text/',
      summary: 'Answers a JSON string',
      tag: 'things',
      auth: { kind: 'none' },
      schema: { response: { 200: { type: 'string' } } },
      handler: () => '{"a": 1}',
    }),
    r({
      method: 'GET',
      url: '/api/taken/',
      summary: 'Fails with an error of the service',
      tag: 'things',
      auth: { kind: 'none' },
      schema: {},
      handler: () => {
        throw Object.assign(new Error('duplicate key'), { code: '23505' });
      },
    }),
    r({
      method: 'GET',
      url: '/api/cached/:id/',
      summary: 'A thing held as JSON text',
      tag: 'things',
      auth: { kind: 'none' },
      schema: {
        params: { type: 'object', properties: { id: { type: 'integer' } } },
        response: { 200: thing },
      },
      handler: ({ params }) =>
        new SerializedJson(params.id === 1 ? '{"id":1,"name":"cached"}' : '{"id":"not a number"}'),
    }),
    r({
      method: 'GET',
      url: '/api/boom/',
      summary: 'Fails',
      tag: 'things',
      auth: { kind: 'none' },
      schema: {},
      handler: () => {
        throw new Error('secret internals');
      },
    }),
    r({
      method: 'POST',
      url: '/echo/',
      summary: 'Echo a raw body (served in front of the router)',
      tag: 'things',
      auth: { kind: 'none' },
      body: 'raw',
      rawFastPath: true,
      schema: { querystring: { type: 'object', additionalProperties: true } },
      handler: async ({ request }) => {
        const text = (await readBody(request.raw, 64)).toString('utf8');
        if (text === 'bad') throw new ConflictError('bad echo');
        if (text === 'boom') throw new Error('secret internals');
        return { echo: text, path: request.url };
      },
    }),
  ],
};

const authenticator: Authenticator<Caller> = {
  async authenticate(request) {
    const header = request.headers.authorization;
    if (!header) throw new AuthenticationError();
    if (header === `Bearer ${READER_KEY}`) return { user: 'reader', scopes: ['thing:read'] };
    if (header === 'Bearer writer') return { user: 'writer', scopes: ['thing:read', 'thing:write'] };
    throw new AuthenticationError('Personal API key is invalid.', 'authentication_failed');
  },
  authorize(auth, scope) {
    if (scope && !auth.scopes.includes(scope))
      throw new ForbiddenError(`API key missing required scope '${scope}'`);
  },
};

let svc: RunningService;
let base: string;
const appDeps: Deps = { things: new Map([[1, { id: 1, name: 'first' }]]) };
let logged: Record<string, unknown>[] = [];
const registry = createMetricsRegistry('management');

beforeAll(async () => {
  const stream = new PassThrough();
  stream.on('data', (line: Buffer) => logged.push(JSON.parse(line.toString())));
  const logger = createLogger({ stream, level: 'info' });
  const app = createRouteApp({
    name: 'management',
    logger,
    registry,
    readiness: {},
    table,
    deps: appDeps,
    authenticators: { personal_key: authenticator as Authenticator },
    jsonBodyLimit: 1024,
    checkResponses: true,
    accessLogSampleRate: 1,
    mapError: (error) =>
      (error as { code?: string }).code === '23505'
        ? new ConflictError('This value is already taken.')
        : undefined,
  });
  svc = await startService({ name: 'test', app, host: '127.0.0.1', port: 0, logger });
  base = `http://127.0.0.1:${svc.port}`;
});
afterAll(() => svc.stop());
beforeEach(() => {
  logged = [];
});

async function call(
  method: string,
  path: string,
  init: { body?: string; headers?: Record<string, string> } = {},
) {
  const res = await fetch(`${base}${path}`, { method, body: init.body, headers: init.headers });
  const text = await res.text();
  return {
    status: res.status,
    headers: res.headers,
    json: text ? (JSON.parse(text) as Record<string, unknown>) : null,
  };
}

const READER_KEY = 'phx_reader0123456789abcdef';
const reader = { authorization: `Bearer ${READER_KEY}` };
const writer = { authorization: 'Bearer writer', 'content-type': 'application/json' };

describe('dispatch', () => {
  it('serves a declared route, with or without its trailing slash and in any letter case', async () => {
    for (const path of ['/api/things/', '/api/things', '/API/Things/']) {
      const res = await call('GET', path, { headers: reader });
      expect(res.status).toBe(200);
      expect(res.json).toEqual({ results: [{ id: 1, name: 'first' }] });
    }
  });

  it('answers a wrong method on a known path with 405 and Allow, after authenticating', async () => {
    const res = await call('PATCH', '/api/things/', { headers: reader });
    expect(res.status).toBe(405);
    expect(res.headers.get('allow')).toBe('GET, HEAD, POST, OPTIONS');
    expect(res.json).toMatchObject({ code: 'method_not_allowed' });
    expect((await call('PATCH', '/api/things/')).status).toBe(401);
  });

  it('answers HEAD wherever GET is served: the same status and headers, no body', async () => {
    const get = await fetch(`${base}/api/things/1/`, { headers: reader });
    const head = await fetch(`${base}/api/things/1/`, { method: 'HEAD', headers: reader });
    expect(head.status).toBe(200);
    expect(head.headers.get('content-length')).toBe(get.headers.get('content-length'));
    expect(head.headers.get('content-type')).toBe(get.headers.get('content-type'));
    expect(await head.text()).toBe('');
    expect((await fetch(`${base}/api/things/1/`, { method: 'HEAD' })).status).toBe(401);
  });

  it('answers an unknown path with a JSON 404', async () => {
    const res = await call('GET', '/api/nothing/', { headers: reader });
    expect(res.status).toBe(404);
    expect(res.json).toEqual({
      type: 'invalid_request',
      code: 'not_found',
      detail: 'Not found.',
      attr: null,
    });
  });

  it('answers a path parameter that cannot match with 404, and malformed percent-encoding with 400', async () => {
    expect((await call('GET', '/api/things/abc/', { headers: reader })).status).toBe(404);
    const bad = await call('GET', '/api/things/%E0%A4%A/', { headers: reader });
    expect(bad.status).toBe(400);
    expect(bad.json).toMatchObject({ code: 'invalid_path', attr: 'path' });
  });

  it('sends 204 without a body', async () => {
    const res = await call('DELETE', '/api/things/99/', { headers: writer });
    expect(res.status).toBe(204);
    expect(res.json).toBeNull();
  });
});

describe('auth and scope', () => {
  it('refuses a missing or invalid credential with 401 before reading the body', async () => {
    expect((await call('GET', '/api/things/')).status).toBe(401);
    const res = await call('POST', '/api/things/', {
      headers: { authorization: 'Bearer nobody', 'content-type': 'application/json' },
      body: '{not json',
    });
    expect(res.status).toBe(401);
    expect(res.json).toMatchObject({ code: 'authentication_failed' });
  });

  it('refuses a credential without the scope with 403 naming it', async () => {
    const res = await call('POST', '/api/things/', {
      headers: { ...reader, 'content-type': 'application/json' },
      body: '{}',
    });
    expect(res.status).toBe(403);
    expect(res.json).toMatchObject({ detail: "API key missing required scope 'thing:write'" });
  });
});

describe('validation', () => {
  it('names the body field at fault, with dotted paths into nested values', async () => {
    const missing = await call('POST', '/api/things/', { headers: writer, body: '{}' });
    expect(missing.status).toBe(400);
    expect(missing.json).toMatchObject({
      type: 'validation_error',
      attr: 'name',
      detail: 'name is required.',
    });
    const nested = await call('POST', '/api/things/', {
      headers: writer,
      body: JSON.stringify({ name: 'x', tags: [{ key: 'a' }, { key: 5 }] }),
    });
    expect(nested.json).toMatchObject({ attr: 'tags.1.key' });
  });

  it('drops a top-level body field it does not know, names it in the access line, and stays strict below', async () => {
    const extra = await call('POST', '/api/things/', {
      headers: writer,
      body: JSON.stringify({ name: 'x', colour: 1, shade: { a: 1 } }),
    });
    expect(extra.status).toBe(201);
    expect(extra.json).toMatchObject({ name: 'x' });
    expect(appDeps.seen).toEqual(['name']);
    expect(logged.find((l) => l.route === '/api/things/' && l.method === 'POST')).toMatchObject({
      ignored_fields: 'colour,shade',
    });
    const nested = await call('POST', '/api/things/', {
      headers: writer,
      body: JSON.stringify({ name: 'x', tags: [{ key: 'a', colour: 1 }] }),
    });
    expect(nested).toMatchObject({ status: 400, json: { attr: 'tags.0.colour' } });
  });

  it('refuses unknown body fields on a route that says so, and a known field that is not served', async () => {
    const unknown = await call('POST', '/api/strict-things/', {
      headers: writer,
      body: JSON.stringify({ name: 'x', shade: 1 }),
    });
    expect(unknown).toMatchObject({
      status: 400,
      json: { attr: 'shade', detail: 'shade is not an accepted field.' },
    });
    const known = await call('POST', '/api/strict-things/', {
      headers: writer,
      body: JSON.stringify({ name: 'x', colour: 'red' }),
    });
    expect(known).toMatchObject({
      status: 400,
      json: { attr: 'colour', detail: 'colour is not served by Sett: leave it out.' },
    });
  });

  it('validates an empty body as an empty object', async () => {
    const res = await call('POST', '/api/things/', { headers: { authorization: 'Bearer writer' } });
    expect(res.status).toBe(400);
    expect(res.json).toMatchObject({ attr: 'name' });
  });

  it('refuses unknown query parameters, and names a bad one', async () => {
    const unknown = await call('GET', '/api/things/?colour=red', { headers: reader });
    expect(unknown.status).toBe(400);
    expect(unknown.json).toMatchObject({ attr: 'colour', detail: "Unknown query parameter 'colour'." });
    const bad = await call('GET', '/api/things/?limit=50', { headers: reader });
    expect(bad.status).toBe(400);
    expect(bad.json).toMatchObject({ attr: 'limit' });
    const repeated = await call('GET', '/api/things/?search=a&search=b', { headers: reader });
    expect(repeated.status).toBe(400);
    expect(repeated.json).toMatchObject({ attr: 'search' });
    const ok = await call('GET', '/api/things/?limit=1&search=fir', { headers: reader });
    expect(ok.json).toEqual({ results: [{ id: 1, name: 'first' }] });
  });

  it('answers malformed JSON with 400, a wrong Content-Type with 415 and an oversized body with 413', async () => {
    const malformed = await call('POST', '/api/things/', { headers: writer, body: '{"name": ' });
    expect(malformed.status).toBe(400);
    expect(malformed.json).toMatchObject({ code: 'invalid_payload' });
    const form = await call('POST', '/api/things/', {
      headers: { authorization: 'Bearer writer', 'content-type': 'application/x-www-form-urlencoded' },
      body: 'name=x',
    });
    expect(form.status).toBe(415);
    const big = await call('POST', '/api/things/', {
      headers: writer,
      body: JSON.stringify({ name: 'x'.repeat(2000) }),
    });
    expect(big.status).toBe(413);
    expect(big.json).toMatchObject({
      code: 'payload_too_large',
      detail: 'Request body must be at most 1024 bytes.',
    });
  });
});

describe('an oversized body', () => {
  it('is answered 413 at once, then the rest is read and dropped so a client still sending is not reset', async () => {
    // 5 MB announced; the rest is sent only after the 413 arrived. Closing at once (as the
    // answer used to) resets the connection under those writes: the client sees EPIPE or
    // ECONNRESET, and a client that was still writing never reads the answer.
    const total = 5 * 1024 * 1024;
    const socket = net.connect(Number(new URL(base).port), '127.0.0.1');
    const errors: string[] = [];
    socket.on('error', (err: NodeJS.ErrnoException) => errors.push(err.code ?? err.message));
    let received = '';
    const answered = new Promise<void>((resolve) =>
      socket.on('data', (d: Buffer) => {
        received += d.toString();
        if (received.includes('payload_too_large')) resolve();
      }),
    );
    socket.write(
      `POST /api/things/ HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer writer\r\n` +
        `Content-Type: application/json\r\nContent-Length: ${total}\r\n\r\n`,
    );
    await answered;
    expect(received).toMatch(/^HTTP\/1\.1 413 /);
    const chunk = Buffer.alloc(256 * 1024, 0x20);
    let sending = true;
    let closedWhileSending = false;
    socket.on('close', () => (closedWhileSending ||= sending));
    for (let sent = 0; sent < total && !socket.destroyed; sent += chunk.length) {
      await new Promise<void>((resolve) => socket.write(chunk, () => resolve()));
      // Give a reset from the server the time to arrive between writes.
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    sending = false;
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect({ errors, closedWhileSending }).toEqual({ errors: [], closedWhileSending: false });
    socket.destroy();
  });
  it('to a client that asked to close: the rest is read and dropped, then 413, with no reset', async () => {
    // Node closes such a connection as soon as the answer is written; answering before the
    // body has arrived reset it under the client's writes (EPIPE instead of the 413).
    const total = 2 * 1024 * 1024;
    const socket = net.connect(Number(new URL(base).port), '127.0.0.1');
    const errors: string[] = [];
    socket.on('error', (err: NodeJS.ErrnoException) => errors.push(err.code ?? err.message));
    let received = '';
    socket.on('data', (d: Buffer) => (received += d.toString()));
    const closed = new Promise<void>((resolve) => socket.on('close', () => resolve()));
    socket.write(
      `POST /api/things/ HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer writer\r\nConnection: close\r\n` +
        `Content-Type: application/json\r\nContent-Length: ${total}\r\n\r\n`,
    );
    const chunk = Buffer.alloc(256 * 1024, 0x20);
    // Written slowly, as a loaded client does: the answer must wait for the last chunk.
    for (let sent = 0; sent < total && !socket.destroyed; sent += chunk.length) {
      await new Promise<void>((resolve) => socket.write(chunk, () => resolve()));
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    await closed;
    expect(errors).toEqual([]);
    expect(received).toMatch(/^HTTP\/1\.1 413 /);
    expect(received).toContain('payload_too_large');
  });
});

describe('upload routes', () => {
  it('parse and validate JSON, and leave a multipart form unread for the handler', async () => {
    const json = await call('POST', '/api/uploads/', {
      headers: { 'content-type': 'application/json' },
      body: '{"name":"x"}',
    });
    expect(json).toMatchObject({ status: 200, json: { json: { name: 'x' } } });
    const invalid = await call('POST', '/api/uploads/', {
      headers: { 'content-type': 'application/json' },
      body: '{"name":5}',
    });
    expect(invalid).toMatchObject({ status: 400, json: { attr: 'name' } });
    const empty = await call('POST', '/api/uploads/');
    expect(empty).toMatchObject({ status: 400, json: { attr: 'name' } });
    const form = new FormData();
    form.append('file', new Blob(['a,b\n']), 'x.csv');
    const res = await fetch(`${base}/api/uploads/`, { method: 'POST', body: form });
    expect(res.status).toBe(200);
    expect(((await res.json()) as { formBytes: number }).formBytes).toBeGreaterThan(4);
  });
});

describe('answers', () => {
  it("maps the service's own errors through its mapError before the generic mapping", async () => {
    const res = await call('GET', '/api/taken/');
    expect(res).toMatchObject({ status: 409, json: { code: 'conflict' } });
  });

  it('sends an answer that is a string as a JSON string', async () => {
    const res = await fetch(`${base}/api/text/`);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    expect(await res.text()).toBe(JSON.stringify('{"a": 1}'));
  });

  it('checks answers against their schema when asked to (tests), as a 500 with an error id', async () => {
    const res = await call('GET', '/api/wrong-shape/');
    expect(res.status).toBe(500);
    expect(res.json).toMatchObject({ type: 'server_error', error_id: expect.any(String) });
  });

  it('sends JSON a handler holds as text as is, and checks it against the schema too', async () => {
    const res = await fetch(`${base}/api/cached/1/`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(await res.text()).toBe('{"id":1,"name":"cached"}');
    const wrong = await call('GET', '/api/cached/2/');
    expect(wrong.status).toBe(500);
    expect(wrong.json).toMatchObject({ type: 'server_error', error_id: expect.any(String) });
  });

  it('never shows an unknown error to the client, and logs it with the same error id', async () => {
    const res = await call('GET', '/api/boom/');
    expect(res.status).toBe(500);
    expect(JSON.stringify(res.json)).not.toContain('secret internals');
    const line = logged.find((l) => l.message === 'unhandled error');
    expect(line).toMatchObject({ error_id: (res.json as { error_id: string }).error_id });
  });

  it('sends CORS headers on answers and errors, never with credentials, and answers preflights', async () => {
    const ok = await call('GET', '/api/things/', { headers: { ...reader, origin: 'https://app.example' } });
    expect(ok.headers.get('access-control-allow-origin')).toBe('https://app.example');
    expect(ok.headers.get('access-control-allow-credentials')).toBeNull();
    const denied = await call('GET', '/api/things/', { headers: { origin: 'https://app.example' } });
    expect(denied.headers.get('access-control-allow-origin')).toBe('https://app.example');
    const preflight = await call('OPTIONS', '/api/things/', {
      headers: { origin: 'https://app.example', 'access-control-request-method': 'POST' },
    });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get('access-control-allow-methods')).toBe('GET, HEAD, POST, OPTIONS');
  });

  it('gives every answer a request id', async () => {
    const res = await call('GET', '/api/nothing/', { headers: { 'x-request-id': 'lb-1234' } });
    expect(res.headers.get('x-request-id')).toBe('lb-1234');
  });
});

describe('operations', () => {
  it('writes one access log line per request with the route template and never the key', async () => {
    const res = await call('GET', '/api/things/1/', { headers: { ...reader, 'x-request-id': 'trace-77' } });
    expect(res.status).toBe(200);
    const line = logged.find((l) => l.message === 'request' && l.request_id === 'trace-77');
    expect(line).toMatchObject({
      method: 'GET',
      route: '/api/things/:id/',
      status: 200,
      bytes: expect.any(Number),
      ms: expect.any(Number),
      key_prefix: 'phx_...cdef',
    });
    expect(JSON.stringify(logged)).not.toContain(READER_KEY);
  });

  it('counts requests by route template, and unmatched ones under one label', async () => {
    await call('GET', '/api/things/1/', { headers: reader });
    await call('GET', '/api/nope/1/', { headers: reader });
    const metrics = await registry.metrics();
    expect(metrics).toMatch(
      /http_requests_total\{method="GET",route="\/api\/things\/:id\/",status="200"[^}]*\} [1-9]/,
    );
    expect(metrics).toMatch(/http_requests_total\{method="GET",route="unmatched",status="404"[^}]*\} [1-9]/);
  });

  it('answers /_health and /_ready', async () => {
    expect((await call('GET', '/_health')).json).toEqual({
      status: 'ok',
      service: 'management',
      version: buildInfo().version,
      git_sha: buildInfo().gitSha,
    });
    expect((await call('GET', '/_ready')).status).toBe(200);
  });
});

describe('a raw fast path', () => {
  it('serves the route as the router would: CORS, request id, metrics label, access line, errors', async () => {
    const ok = await call('POST', '/echo?x=1', { body: 'hi', headers: { origin: 'https://app.example' } });
    expect(ok.status).toBe(200);
    expect(ok.json).toEqual({ echo: 'hi', path: '/echo?x=1' });
    expect(ok.headers.get('access-control-allow-origin')).toBe('https://app.example');
    expect(ok.headers.get('access-control-allow-credentials')).toBeNull();
    expect(ok.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
    expect(logged).toContainEqual(
      expect.objectContaining({ message: 'request', route: '/echo/', status: 200 }),
    );

    expect(await call('POST', '/echo/', { body: 'bad' })).toMatchObject({
      status: 409,
      json: { detail: 'bad echo' },
    });
    const boom = await call('POST', '/echo/', { body: 'boom' });
    expect(boom.status).toBe(500);
    expect(JSON.stringify(boom.json)).not.toContain('secret internals');
    const big = await call('POST', '/echo/', { body: 'x'.repeat(100) });
    expect(big.status).toBe(413);
    expect(big.headers.get('connection')).toBe('close');

    // Another spelling reaches the same route through the router; other methods get 405.
    expect(await call('POST', '/ECHO/', { body: 'hi' })).toMatchObject({ status: 200, json: { echo: 'hi' } });
    expect((await call('GET', '/echo/')).status).toBe(405);

    const metrics = await registry.metrics();
    expect(metrics).toMatch(/http_requests_total\{[^}]*route="\/echo\/"[^}]*status="200"[^}]*\} [1-9]/);
    // Error answers are counted and logged with their status too (once written: on 'finish').
    await waitFor('the error answers counted', async () =>
      /http_requests_total\{[^}]*route="\/echo\/"[^}]*status="409"[^}]*\} 1/.test(await registry.metrics()),
    );
    expect(await registry.metrics()).toMatch(
      /http_requests_total\{[^}]*route="\/echo\/"[^}]*status="500"[^}]*\} 1/,
    );
    for (const status of [409, 500, 413])
      expect(logged).toContainEqual(expect.objectContaining({ message: 'request', route: '/echo/', status }));
  });

  it('reads and drops the rest of an oversized body before the 413 to a client that asked to close', async () => {
    const total = 8 * 1024 * 1024;
    const socket = net.connect(Number(new URL(base).port), '127.0.0.1');
    const errors: string[] = [];
    socket.on('error', (err: NodeJS.ErrnoException) => errors.push(err.code ?? err.message));
    let received = '';
    socket.on('data', (d: Buffer) => (received += d.toString()));
    const closed = new Promise<void>((resolve) => socket.on('close', () => resolve()));
    socket.write(`POST /echo/ HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: ${total}\r\n\r\n`);
    const chunk = Buffer.alloc(128 * 1024, 0x20);
    for (let sent = 0; sent < total && !socket.destroyed; sent += chunk.length) {
      await new Promise<void>((resolve) => socket.write(chunk, () => resolve()));
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    await closed;
    expect(errors).toEqual([]);
    expect(received).toMatch(/^HTTP\/1\.1 413 /);
  });

  it('refuses a declaration it cannot serve in front of the router', () => {
    expect(() =>
      createRouteApp({
        name: 'bad',
        logger: createLogger({ stream: new PassThrough() }),
        registry: createMetricsRegistry('bad'),
        readiness: {},
        deps: {},
        table: {
          service: 'decide',
          routes: [
            route<Record<string, never>>()({
              method: 'POST',
              url: '/things/:id/',
              summary: 's',
              tag: 't',
              auth: { kind: 'none' },
              body: 'raw',
              rawFastPath: true,
              schema: { querystring: { type: 'object', additionalProperties: true } },
              handler: () => ({}),
            }),
          ],
        },
      }),
    ).toThrow(/cannot be a raw fast path/);
  });
});
