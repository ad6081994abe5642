// The edge forwards messages unchanged: statuses (including the edge's own 404 and 502),
// header fields and bodies both ways, in either framing (Content-Length and chunked), HEAD and
// 204 answers without bodies, pipelined requests answered in order, and X-Request-Id passed on
// or generated, and on the edge's own answers too. Requests node:http cannot parse safely are
// refused with a 4xx JSON body. Raw sockets on loopback, so nothing between the test and the edge
// rewrites a byte.
import { createHash } from 'node:crypto';
import http from 'node:http';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { startEdge, type Edge } from '../src/edge';

interface Seen {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  bodySha: string;
  bodyLength: number;
}

let upstream: http.Server;
let edge: Edge;
let deadPort: number;
const seen: Seen[] = [];

beforeAll(async () => {
  upstream = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      seen.push({
        method: req.method!,
        url: req.url!,
        headers: req.headers,
        bodySha: createHash('sha256').update(body).digest('hex'),
        bodyLength: body.length,
      });
      const url = new URL(req.url!, 'http://x');
      const status = Number(url.searchParams.get('status') ?? 200);
      if (url.pathname.startsWith('/api/chunked')) {
        // Several writes without a length: chunked on the wire.
        res.writeHead(status, {
          'content-type': 'text/plain',
          'x-custom': 'a',
          'set-cookie': ['one=1', 'two=2'],
        });
        for (let i = 0; i < 5; i++) res.write(`part ${i};`.repeat(1000));
        res.end('end');
        return;
      }
      if (url.pathname.startsWith('/api/echo')) {
        res.writeHead(status, {
          'content-type': 'application/octet-stream',
          'x-echo-length': String(body.length),
          'www-authenticate': 'Bearer realm="sett"',
        });
        res.end(req.method === 'HEAD' ? undefined : body);
        return;
      }
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(status === 204 || status === 304 ? undefined : JSON.stringify({ status, url: req.url }));
    });
  });
  await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', () => r()));
  const closed = net.createServer();
  await new Promise<void>((r) => closed.listen(0, '127.0.0.1', () => r()));
  deadPort = (closed.address() as AddressInfo).port;
  await new Promise<void>((r) => closed.close(() => r()));
  const target = { host: '127.0.0.1', port: (upstream.address() as AddressInfo).port };
  edge = await startEdge({
    host: '127.0.0.1',
    port: 0,
    // Nothing listens on the capture port: the edge's 502.
    upstreams: { management: target, decide: target, capture: { host: '127.0.0.1', port: deadPort } },
  });
});

afterAll(async () => {
  await edge.stop();
  upstream.closeAllConnections();
  await new Promise<void>((r) => upstream.close(() => r()));
});

beforeEach(() => {
  seen.length = 0;
});

/** Sends raw bytes on one connection and reads until `answers` complete answers arrived. */
function exchange(raw: Buffer | string, answers: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(edge.port, '127.0.0.1');
    let text = '';
    const complete = () => {
      // Count complete answers by their framing (Content-Length or the chunked terminator).
      let rest = text;
      let n = 0;
      while (rest.length) {
        const headEnd = rest.indexOf('\r\n\r\n');
        if (headEnd < 0) return false;
        const head = rest.slice(0, headEnd);
        let body = rest.slice(headEnd + 4);
        const status = Number(head.slice(9, 12));
        const length = /\r\ncontent-length: (\d+)/i.exec(head);
        if (status < 200) {
          rest = body;
          continue;
        }
        if (/\r\ntransfer-encoding: chunked/i.test(head)) {
          const end = body.indexOf('\r\n0\r\n\r\n');
          if (end < 0) return false;
          body = body.slice(end + 7);
        } else if (length && !/^HEAD/.test(String(raw))) {
          if (body.length < Number(length[1])) return false;
          body = body.slice(Number(length[1]));
        }
        n++;
        rest = body;
      }
      return n >= answers;
    };
    socket.on('data', (d: Buffer) => {
      text += d.toString('latin1');
      if (complete()) {
        socket.destroy();
        resolve(text);
      }
    });
    socket.on('end', () => resolve(text));
    socket.on('error', reject);
    socket.write(raw);
  });
}

function statusOf(answer: string): number {
  return Number(answer.slice(9, 12));
}

it.each([200, 201, 400, 401, 403, 404, 409, 418, 429, 500, 503])(
  'passes status %i and its body through',
  async (status) => {
    const res = await fetch(`http://127.0.0.1:${edge.port}/api/thing/?status=${status}`);
    expect(res.status).toBe(status);
    expect(await res.json()).toEqual({ status, url: `/api/thing/?status=${status}` });
  },
);

it('passes 204 and HEAD answers through without a body, and the connection goes on', async () => {
  const text = await exchange(
    'GET /api/x?status=204 HTTP/1.1\r\nHost: h\r\n\r\n' +
      'HEAD /api/echo HTTP/1.1\r\nHost: h\r\n\r\n' +
      'GET /api/after HTTP/1.1\r\nHost: h\r\n\r\n',
    3,
  );
  const statuses = [...text.matchAll(/^HTTP\/1\.1 (\d{3})/gm)].map((m) => Number(m[1]));
  expect(statuses).toEqual([204, 200, 200]);
  expect(text).toContain('"url":"/api/after"');
});

it('passes binary request and answer bodies through byte for byte, with their header fields', async () => {
  const body = Buffer.alloc(3 * 1024 * 1024 + 17);
  for (let i = 0; i < body.length; i++) body[i] = (i * 31 + 7) & 0xff;
  const res = await fetch(`http://127.0.0.1:${edge.port}/api/echo/?status=202`, {
    method: 'PUT',
    body,
    headers: { 'x-client-field': 'kept as is', 'content-type': 'application/x-thing' },
  });
  expect(res.status).toBe(202);
  expect(res.headers.get('www-authenticate')).toBe('Bearer realm="sett"');
  expect(res.headers.get('x-echo-length')).toBe(String(body.length));
  expect(Buffer.from(await res.arrayBuffer()).equals(body)).toBe(true);
  expect(seen[0]).toMatchObject({
    method: 'PUT',
    url: '/api/echo/?status=202',
    bodyLength: body.length,
    bodySha: createHash('sha256').update(body).digest('hex'),
  });
  expect(seen[0]!.headers['x-client-field']).toBe('kept as is');
  expect(seen[0]!.headers['content-type']).toBe('application/x-thing');
});

it('passes a chunked request body and a chunked answer through', async () => {
  const parts = ['{"a":', '"b"', ',"c":[1,2,3]}'];
  const raw =
    'POST /api/echo HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n' +
    parts.map((p) => `${p.length.toString(16)}\r\n${p}\r\n`).join('') +
    '0\r\n\r\n';
  const text = await exchange(raw, 1);
  expect(statusOf(text)).toBe(200);
  expect(text).toContain('{"a":"b","c":[1,2,3]}');
  expect(seen[0]!.bodyLength).toBe(parts.join('').length);

  const res = await fetch(`http://127.0.0.1:${edge.port}/api/chunked?status=207`);
  expect(res.status).toBe(207);
  expect(res.headers.get('transfer-encoding')).toBe('chunked');
  expect(res.headers.get('x-custom')).toBe('a');
  expect(res.headers.getSetCookie()).toEqual(['one=1', 'two=2']);
  const expected = Array.from({ length: 5 }, (_, i) => `part ${i};`.repeat(1000)).join('') + 'end';
  expect(await res.text()).toBe(expected);
});

it('answers pipelined requests in order', async () => {
  const raw = [1, 2, 3, 4].map((i) => `GET /api/n${i} HTTP/1.1\r\nHost: h\r\n\r\n`).join('');
  const text = await exchange(raw, 4);
  const urls = [...text.matchAll(/"url":"([^"]+)"/g)].map((m) => m[1]);
  expect(urls).toEqual(['/api/n1', '/api/n2', '/api/n3', '/api/n4']);
});

it('passes a valid X-Request-Id on and generates one when there is none (or it is unusable)', async () => {
  await fetch(`http://127.0.0.1:${edge.port}/api/rid`, { headers: { 'x-request-id': 'abc-123' } });
  await fetch(`http://127.0.0.1:${edge.port}/api/rid`);
  await fetch(`http://127.0.0.1:${edge.port}/api/rid`, { headers: { 'x-request-id': 'x'.repeat(300) } });
  expect(seen[0]!.headers['x-request-id']).toBe('abc-123');
  expect(seen[1]!.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
  expect(seen[2]!.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
  expect(seen[1]!.headers['x-request-id']).not.toBe(seen[2]!.headers['x-request-id']);
});

it('adds the forwarded fields and drops hop-by-hop ones', async () => {
  await exchange(
    'GET /api/fwd HTTP/1.1\r\nHost: example.test\r\nX-Forwarded-For: 203.0.113.9\r\n' +
      'X-Forwarded-Proto: https\r\nKeep-Alive: timeout=99\r\nConnection: keep-alive\r\n\r\n',
    1,
  );
  const h = seen[0]!.headers;
  expect(h['x-forwarded-for']).toBe('203.0.113.9, 127.0.0.1');
  expect(h['x-forwarded-proto']).toBe('http');
  expect(h['x-forwarded-host']).toBe('example.test');
  expect(h['keep-alive']).toBeUndefined();
  expect(h.host).toBe('example.test');
});

it('answers 502 in JSON when the service is not listening, with the request id', async () => {
  const res = await fetch(`http://127.0.0.1:${edge.port}/i/v0/e/`, {
    method: 'POST',
    body: '{}',
    headers: { 'x-request-id': 'sdk-502' },
  });
  expect(res.status).toBe(502);
  expect(res.headers.get('x-request-id')).toBe('sdk-502');
  expect(await res.json()).toMatchObject({ type: 'server_error', code: 'bad_gateway' });
});

it('carries an X-Request-Id on its own 404 and /_health, the caller’s or a fresh one', async () => {
  const given = await fetch(`http://127.0.0.1:${edge.port}/nope`, { headers: { 'x-request-id': 'r-404' } });
  expect(given.status).toBe(404);
  expect(given.headers.get('x-request-id')).toBe('r-404');
  expect(await given.json()).toMatchObject({ code: 'not_found' });
  const fresh = await fetch(`http://127.0.0.1:${edge.port}/_health`);
  expect(fresh.status).toBe(200);
  expect(fresh.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
});

it.each([
  ['both Content-Length and Transfer-Encoding', 'Content-Length: 3\r\nTransfer-Encoding: chunked', 400],
  ['two Content-Length fields', 'Content-Length: 3\r\nContent-Length: 4', 400],
  ['a malformed Content-Length', 'Content-Length: 3x', 400],
  ['a header name with a space', 'Content-Length : 3', 400],
  ['a folded header line', 'X-A: 1\r\n  folded', 400],
  ['an unsupported Transfer-Encoding', 'Transfer-Encoding: gzip', 400],
])('refuses %s with a JSON 4xx/5xx and closes', async (_name, fields, status) => {
  const text = await exchange(`POST /api/x HTTP/1.1\r\nHost: h\r\n${fields}\r\n\r\nabc`, 1);
  expect(statusOf(text)).toBe(status);
  expect(text).toMatch(/connection: close/i);
  expect(text).toMatch(/\r\nx-request-id: [0-9a-f-]{36}\r\n/i);
  expect(JSON.parse(text.slice(text.indexOf('\r\n\r\n') + 4))).toMatchObject({
    type: 'invalid_request',
    code: 'invalid_http',
  });
  expect(seen).toEqual([]); // nothing reached the service
});

it('refuses a head larger than 64 KB with 431', async () => {
  const text = await exchange(`GET /api/x HTTP/1.1\r\nHost: h\r\nX-Big: ${'a'.repeat(70 * 1024)}\r\n\r\n`, 1);
  expect(statusOf(text)).toBe(431);
});

it('answers a client that shut its sending side after the request', async () => {
  const text = await new Promise<string>((resolve, reject) => {
    const socket = net.connect(edge.port, '127.0.0.1');
    let data = '';
    socket.on('data', (d: Buffer) => (data += d.toString('latin1')));
    socket.on('end', () => resolve(data));
    socket.on('error', reject);
    socket.end('GET /api/half-closed HTTP/1.1\r\nHost: h\r\n\r\n');
  });
  expect(statusOf(text)).toBe(200);
  expect(text).toContain('"url":"/api/half-closed"');
});

it.each([10, 2 * 1024 * 1024])(
  'answers 100 Continue to a client that asked for it, and its body goes through (%d bytes)',
  async (size) => {
    const answer = await new Promise<string>((resolve, reject) => {
      const socket = net.connect(edge.port, '127.0.0.1');
      let data = '';
      socket.on('data', (d: Buffer) => {
        const first = data === '';
        data += d.toString('latin1');
        // The body goes only after the 100 Continue, as a client that sent Expect does.
        if (first && data.startsWith('HTTP/1.1 100')) socket.write(Buffer.alloc(size, 0x41));
        if (/HTTP\/1\.1 200[\s\S]*\r\n\r\n[\s\S]+/.test(data) && data.includes(`"`)) {
          socket.destroy();
          resolve(data);
        }
      });
      socket.on('error', reject);
      socket.write(
        `POST /api/x HTTP/1.1\r\nHost: h\r\nContent-Length: ${size}\r\nExpect: 100-continue\r\n\r\n`,
      );
    });
    expect(answer.startsWith('HTTP/1.1 100 Continue\r\n\r\n')).toBe(true);
    expect(answer).toContain('HTTP/1.1 200');
    expect(seen[0]!.bodyLength).toBe(size);
    // The edge answered the expectation itself: the service gets a plain request.
    expect(seen[0]!.headers.expect).toBeUndefined();
  },
);
