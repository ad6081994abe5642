// What every abuse scenario uses: one request on its own connection from a chosen loopback
// address, timed, and small helpers to state a claim.
import http from 'node:http';
import { randomUUID } from 'node:crypto';

export interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
  ms: number;
}

/** One request on its own connection, from `from` (a loopback address). */
export function send(
  baseUrl: string,
  opts: {
    method?: string;
    path: string;
    headers?: Record<string, string>;
    body?: string | Buffer;
    from?: string;
  },
): Promise<Answer> {
  const url = new URL(baseUrl);
  const started = process.hrtime.bigint();
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: url.hostname,
        port: url.port,
        method: opts.method ?? 'GET',
        path: opts.path,
        agent: false,
        localAddress: opts.from,
        headers: {
          ...opts.headers,
          ...(opts.body === undefined ? {} : { 'content-length': String(Buffer.byteLength(opts.body)) }),
        },
        timeout: 30_000,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (d: Buffer) => chunks.push(d));
        res.on('end', () =>
          resolve({
            status: res.statusCode!,
            headers: res.headers,
            body: Buffer.concat(chunks).toString('utf8'),
            ms: Number(process.hrtime.bigint() - started) / 1e6,
          }),
        );
        res.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(new Error(`no answer to ${opts.path} within 30 s`)));
    req.on('error', reject);
    req.end(opts.body);
  });
}

export function check(condition: boolean, message: string): void {
  if (!condition) throw new Error(message);
}

export const bearer = (key: string) => ({ authorization: `Bearer ${key}` });
export const json = { 'content-type': 'application/json' };
export const unknownKey = () => `phx_${randomUUID().replace(/-/g, '')}NoSuchKey`;
export const parse = (a: Answer) => JSON.parse(a.body) as Record<string, unknown>;
export const p99 = (ms: number[]) => [...ms].sort((a, b) => a - b)[Math.ceil(ms.length * 0.99) - 1] ?? 0;

/** Asks `ask` again and again (at least `atLeast` times) until `until` settles: what another
 * client got while a scenario's heavy requests ran. */
export async function meanwhile(
  until: Promise<unknown>,
  ask: () => Promise<Answer>,
  atLeast = 3,
): Promise<Answer[]> {
  const seen: Answer[] = [];
  let done = false;
  const stop = () => (done = true);
  until.then(stop, stop);
  while (!done || seen.length < atLeast) seen.push(await ask());
  return seen;
}
