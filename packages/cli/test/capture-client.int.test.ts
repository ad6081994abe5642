// The import's capture client against real sockets: a --url nothing listens on ends the import
// at once with a message naming the URL (no minutes of retries), while a connection lost after
// capture has answered once is retried until capture is back.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { freePort } from '@sett/testing';
import { ImportAbortedError, createCaptureClient, type BatchItem } from '../src/import/capture-client';

const items: BatchItem[] = [{ seq: 1, line: 1, json: '{"event":"e","distinct_id":"d"}' }];

function listen(server: http.Server, port = 0): Promise<number> {
  return new Promise((resolve) =>
    server.listen(port, '127.0.0.1', () => resolve((server.address() as AddressInfo).port)),
  );
}
const close = (server: http.Server) =>
  new Promise<void>((resolve) => {
    server.closeAllConnections();
    server.close(() => resolve());
  });

it('connection refused on the first request aborts at once, naming the URL', async () => {
  const port = await freePort();
  const retries: string[] = [];
  const client = createCaptureClient({
    url: `http://127.0.0.1:${port}`,
    token: 'phc_x',
    initialBackoffMs: 10,
    onRetry: (r) => retries.push(r.error),
  });
  const error = await client.send(items).catch((e: unknown) => e);
  expect(error).toBeInstanceOf(ImportAbortedError);
  expect((error as Error).message).toContain(`http://127.0.0.1:${port}/batch/`);
  expect((error as Error).message).toMatch(/ECONNREFUSED|refused/);
  expect((error as Error).message).toMatch(/--url/);
  expect(retries).toEqual([]);
});

it('an unknown host on the first request aborts at once', async () => {
  const retries: string[] = [];
  const client = createCaptureClient({
    url: 'http://sett-no-such-host.invalid',
    token: 'phc_x',
    initialBackoffMs: 10,
    onRetry: (r) => retries.push(r.error),
  });
  await expect(client.send(items)).rejects.toThrow(/sett-no-such-host\.invalid/);
  expect(retries).toEqual([]);
});

it('after one success, a refused connection is retried until capture answers again', async () => {
  let served = 0;
  const handler: http.RequestListener = (req, res) => {
    req.resume();
    req.on('end', () => {
      served++;
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"status":1}');
    });
  };
  let server = http.createServer(handler);
  const port = await listen(server);
  const retries: string[] = [];
  let restarted: Promise<number> | null = null;
  const client = createCaptureClient({
    url: `http://127.0.0.1:${port}`,
    token: 'phc_x',
    initialBackoffMs: 20,
    maxBackoffMs: 50,
    onRetry: (r) => {
      retries.push(r.error);
      // Capture comes back after the first failed attempt.
      if (!restarted) {
        server = http.createServer(handler);
        restarted = listen(server, port);
      }
    },
  });
  expect(await client.send(items)).toEqual({ accepted: 1, refused: [] });
  await close(server);
  expect(await client.send(items)).toEqual({ accepted: 1, refused: [] });
  expect(retries.length).toBeGreaterThanOrEqual(1);
  expect(retries[0]).toMatch(/ECONNREFUSED|refused/);
  expect(served).toBe(2);
  await close(server);
});
