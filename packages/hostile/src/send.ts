// Sends one hostile case over a fresh TCP connection with node:http, so the path goes out
// byte for byte (fetch would normalise it) and a reset or hang is seen as such. The verdict
// says what the suite requires of every answer: a status below 500, a JSON body, in time.
import http from 'node:http';
import type { HostileCase } from './corpus';

export interface Outcome {
  name: string;
  status?: number;
  /** The response body (bodies over 64 MB are cut, and then fail the JSON check). */
  body?: string;
  ms: number;
  /** A transport failure: reset, refused, timed out. */
  error?: string;
}

export function sendCase(baseUrl: string, c: HostileCase, timeoutMs: number): Promise<Outcome> {
  const url = new URL(baseUrl);
  const started = Date.now();
  let body: Buffer | undefined;
  try {
    const raw = c.body?.();
    body = raw === undefined ? undefined : Buffer.isBuffer(raw) ? raw : Buffer.from(raw, 'utf8');
  } catch (error) {
    return Promise.resolve({
      name: c.name,
      ms: 0,
      error: `could not build the body: ${(error as Error).message}`,
    });
  }
  return new Promise<Outcome>((resolve) => {
    let settled = false;
    const finish = (o: Omit<Outcome, 'name' | 'ms'>) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve({ name: c.name, ms: Date.now() - started, ...o });
    };
    const req = http.request({
      host: url.hostname,
      port: url.port,
      method: c.method,
      path: c.path,
      agent: false,
      headers: {
        ...c.headers,
        ...(body ? { 'content-length': String(body.length) } : {}),
        connection: 'close',
      },
    });
    const timer = setTimeout(() => {
      finish({ error: `no answer within ${timeoutMs} ms` });
      req.destroy();
    }, timeoutMs);
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (d: Buffer) => {
        if (size < 64 * 1024 * 1024) chunks.push(d);
        size += d.length;
      });
      res.on('end', () => finish({ status: res.statusCode, body: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', (err) => finish({ status: res.statusCode, error: `response aborted: ${err.message}` }));
    });
    // A server may answer (413) and close before the whole body is written: an error after
    // the response arrived is the client's write failing, not the server misbehaving.
    req.on('error', (err) =>
      finish({ error: `${(err as NodeJS.ErrnoException).code ?? ''} ${err.message}`.trim() }),
    );
    req.end(body);
  });
}

/** Why an outcome breaks the rules, or undefined when it is fine. */
export function verdict(c: HostileCase, o: Outcome): string | undefined {
  if (o.error && o.status === undefined) return o.error;
  if (o.error) return `status ${o.status}, then ${o.error}`;
  const status = o.status!;
  if (status >= 500) return `status ${status}`;
  // Answers without a body by definition: 204, and CORS preflights; a 202 may have none
  // either (PostHog's person deletions answer 202 with only a Location).
  if (status === 204 || (status === 202 && o.body === '') || (c.method === 'OPTIONS' && o.body === ''))
    return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(o.body ?? '');
  } catch {
    return `status ${status} without a JSON body`;
  }
  // Management's errors say what is wrong (PostHog's {type, code, detail, attr}).
  if (c.service === 'management' && status >= 400) {
    const detail = (parsed as { detail?: unknown } | null)?.detail;
    if (typeof detail !== 'string' || detail === '') return `status ${status} without a detail`;
  }
  return undefined;
}

/** Runs `cases` with at most `concurrency` requests in flight; `onResult` sees each in turn. */
export async function runPool<T>(
  items: T[],
  concurrency: number,
  run: (item: T) => Promise<void>,
): Promise<void> {
  let next = 0;
  const workers = Array.from({ length: Math.min(concurrency, items.length) }, async () => {
    while (next < items.length) {
      const item = items[next++]!;
      await run(item);
    }
  });
  await Promise.all(workers);
}
