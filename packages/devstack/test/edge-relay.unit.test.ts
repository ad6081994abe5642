// The edge relays every upstream answer unchanged, including an early 413 sent (like capture's)
// from the headers alone, before and without reading a body larger than the limit; bodies under
// the limit still go through whole. Loopback sockets only.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { startEdge, type Edge } from '../src/edge';

const LIMIT = 20 * 1024 * 1024;
let upstream: http.Server;
let edge: Edge;
let base: string;

beforeAll(async () => {
  upstream = http.createServer((req, res) => {
    if (Number(req.headers['content-length']) > LIMIT) {
      // What capture does: answer at once, never read the body, close the connection.
      res.setHeader('Connection', 'close');
      res.writeHead(413, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          type: 'invalid_request',
          code: 'payload_too_large',
          detail: 'too large',
          attr: null,
        }),
      );
      return;
    }
    let size = 0;
    req.on('data', (c: Buffer) => (size += c.length));
    req.on('end', () =>
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ size })),
    );
  });
  await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', () => r()));
  const target = { host: '127.0.0.1', port: (upstream.address() as AddressInfo).port };
  edge = await startEdge({
    host: '127.0.0.1',
    port: 0,
    upstreams: { capture: target, decide: target, management: target },
  });
  base = `http://127.0.0.1:${edge.port}`;
});

afterAll(async () => {
  await edge.stop();
  upstream.closeAllConnections();
  await new Promise<void>((r) => upstream.close(() => r()));
});

it.each([LIMIT + 1, LIMIT + 5 * 1024 * 1024, 60 * 1024 * 1024])(
  'relays the early 413 for a %d byte body instead of a 502',
  async (size) => {
    const res = await fetch(`${base}/e/`, { method: 'POST', body: Buffer.alloc(size, 0x61) });
    expect(res.status).toBe(413);
    expect(await res.json()).toMatchObject({ code: 'payload_too_large' });
  },
);

it('still passes bodies under the limit through whole, on the same edge afterwards', async () => {
  for (const size of [0, 1, 1024 * 1024, LIMIT]) {
    const res = await fetch(`${base}/e/`, { method: 'POST', body: Buffer.alloc(size, 0x62) });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ size });
  }
});
