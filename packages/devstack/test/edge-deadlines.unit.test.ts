// The dev edge's deadlines and aborts, against a stand-in service on loopback: a head sent one
// line at a time is cut off at the header deadline (408, JSON, X-Request-Id); a body that stops
// coming is cut off at the request deadline; an idle connection closes after the keep-alive
// deadline; and a client that closes in the middle of its body frees the service connection at
// once. Every client here stops by itself within a few seconds.
import http from 'node:http';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { startEdge, type Edge } from '../src/edge';

let upstream: http.Server;
let edge: Edge;
const aborted: string[] = [];
/** The service-side socket of each request, by path. */
const sockets = new Map<string, net.Socket>();

beforeAll(async () => {
  upstream = http.createServer((req, res) => {
    sockets.set(req.url!, req.socket);
    req.on('aborted', () => aborted.push(req.url!));
    req.resume();
    req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}'));
  });
  await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', () => r()));
  const up = { host: '127.0.0.1', port: (upstream.address() as AddressInfo).port };
  edge = await startEdge({
    host: '127.0.0.1',
    port: 0,
    upstreams: { capture: up, decide: up, management: up },
    timeouts: { headersMs: 1_000, requestMs: 2_000, keepAliveMs: 1_000 },
  });
});

afterAll(async () => {
  await edge.stop();
  upstream.closeAllConnections();
  await new Promise<void>((r) => upstream.close(() => r()));
});

/** Connects, sends `parts` one every `everyMs`, and resolves with what came back and when the
 * edge closed the connection (or gives up after `giveUpMs`). */
function trickle(
  parts: string[],
  everyMs: number,
  giveUpMs: number,
): Promise<{ text: string; closedAfterMs: number | null }> {
  return new Promise((resolve) => {
    const socket = net.connect(edge.port, '127.0.0.1');
    const started = Date.now();
    let text = '';
    let i = 0;
    const timer = setInterval(() => {
      if (i < parts.length && socket.writable) socket.write(parts[i++]!);
    }, everyMs);
    const giveUp = setTimeout(() => finish(null), giveUpMs);
    const finish = (closedAfterMs: number | null) => {
      clearInterval(timer);
      clearTimeout(giveUp);
      socket.destroy();
      resolve({ text, closedAfterMs });
    };
    socket.on('connect', () => socket.write(parts[i++]!));
    socket.on('data', (d: Buffer) => (text += d.toString('latin1')));
    socket.on('error', () => undefined);
    socket.on('close', () => finish(Date.now() - started));
  });
}

it('cuts off a client sending its head one line at a time at the header deadline, with a JSON 408', async () => {
  const lines = [
    'GET /api/slow HTTP/1.1\r\n',
    ...Array.from({ length: 12 }, (_, i) => `X-Line-${i}: ${i}\r\n`),
  ];
  const { text, closedAfterMs } = await trickle(lines, 300, 6_000);
  expect(closedAfterMs).not.toBeNull();
  expect(closedAfterMs!).toBeGreaterThanOrEqual(900);
  expect(closedAfterMs!).toBeLessThan(3_000);
  expect(text).toMatch(/^HTTP\/1\.1 408 /);
  expect(text).toMatch(/\r\nx-request-id: [0-9a-f-]{36}\r\n/i);
  expect(JSON.parse(text.slice(text.indexOf('\r\n\r\n') + 4))).toMatchObject({ code: 'request_timeout' });
});

it('cuts off a body that stops coming at the request deadline, and the service connection with it', async () => {
  aborted.length = 0;
  const head = 'POST /api/slow-body HTTP/1.1\r\nHost: h\r\nContent-Length: 200000\r\n\r\n';
  const { closedAfterMs } = await trickle([head, 'a'.repeat(70_000), 'b'], 500, 8_000);
  expect(closedAfterMs).not.toBeNull();
  expect(closedAfterMs!).toBeLessThan(4_500);
  await waitFor(() => aborted.includes('/api/slow-body'));
});

it('closes an idle keep-alive connection after the keep-alive deadline', async () => {
  const { text, closedAfterMs } = await trickle(['GET /api/once HTTP/1.1\r\nHost: h\r\n\r\n'], 100, 5_000);
  expect(text).toMatch(/^HTTP\/1\.1 200 /);
  expect(closedAfterMs).not.toBeNull();
  expect(closedAfterMs!).toBeLessThan(3_000);
});

it('frees the service connection at once when the client closes in the middle of its body', async () => {
  aborted.length = 0;
  const socket = net.connect(edge.port, '127.0.0.1');
  socket.on('error', () => undefined);
  const closed = new Promise<void>((r) => socket.on('close', () => r()));
  await new Promise<void>((r) => socket.on('connect', () => r()));
  socket.write('POST /api/aborted HTTP/1.1\r\nHost: h\r\nContent-Length: 100000\r\n\r\n{');
  // The service has the request before the client leaves.
  await waitFor(() => sockets.has('/api/aborted'));
  socket.end();
  await closed; // the edge closed its side too
  await waitFor(() => aborted.includes('/api/aborted'));
  await waitFor(() => sockets.get('/api/aborted')!.destroyed);
});

async function waitFor(check: () => boolean | Promise<boolean>, ms = 2_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 20));
  }
}
