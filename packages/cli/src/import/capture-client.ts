// Posts batches of prepared events to capture's /batch/ with historical_migration: true,
// gzip-compressed. Retries with backoff on 429, 5xx (capture answers 503 with Retry-After while
// Kafka is down) and network errors once capture has answered at least once; a network error
// before any answer (a wrong --url: connection refused, unknown host) ends the import at once. A 400 or 413 for a batch is split in halves until the
// refused events stand alone, so one event capture refuses costs only its own line.
// Capture answers 200 {status: 1} only when Kafka acknowledged every event it kept.
import zlib from 'node:zlib';
import { promisify } from 'node:util';

const gzip = promisify(zlib.gzip);

export type BatchItem = { seq: number; line: number; json: string };
export type BatchResult = { accepted: number; refused: Array<{ item: BatchItem; reason: string }> };

/** The import cannot go on (bad key, retries exhausted): the checkpoint stays for --resume. */
export class ImportAbortedError extends Error {}

export type CaptureClientOptions = {
  url: string;
  token: string;
  /** Attempts per request before giving up. */
  maxAttempts?: number;
  initialBackoffMs?: number;
  maxBackoffMs?: number;
  requestTimeoutMs?: number;
  signal?: AbortSignal;
  onRetry?: (info: { status: number | null; attempt: number; waitMs: number; error: string }) => void;
};

export type CaptureClient = { send(items: BatchItem[]): Promise<BatchResult> };

const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const t = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(t);
      reject(signal!.reason);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });

function retryAfterMs(header: string | null): number | null {
  if (!header) return null;
  const s = Number(header);
  if (Number.isFinite(s) && s >= 0) return s * 1000;
  const d = Date.parse(header);
  return Number.isNaN(d) ? null : Math.max(0, d - Date.now());
}

export function createCaptureClient(opts: CaptureClientOptions): CaptureClient {
  const endpoint = `${opts.url.replace(/\/+$/, '')}/batch/`;
  const maxAttempts = opts.maxAttempts ?? 10;
  const initial = opts.initialBackoffMs ?? 500;
  const maxBackoff = opts.maxBackoffMs ?? 30_000;
  const timeoutMs = opts.requestTimeoutMs ?? 120_000;
  const head = `{"api_key":${JSON.stringify(opts.token)},"historical_migration":true,"batch":[`;
  // Until something answered at this URL, a network error means the URL is wrong, not that
  // capture is restarting: retrying it for minutes only hides the typo.
  let answered = false;

  /** One request with retries: 'ok', or the 4xx capture gave (400/413 are split by the caller). */
  async function post(items: BatchItem[]): Promise<{ status: number; detail: string }> {
    const body = await gzip(head + items.map((i) => i.json).join(',') + ']}', { level: 1 });
    for (let attempt = 1; ; attempt++) {
      let status: number | null = null;
      let error: string;
      let wait: number | null = null;
      try {
        const res = await fetch(endpoint, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' },
          body,
          signal: opts.signal
            ? AbortSignal.any([opts.signal, AbortSignal.timeout(timeoutMs)])
            : AbortSignal.timeout(timeoutMs),
        });
        answered = true;
        const text = await res.text();
        status = res.status;
        if (res.status === 200) return { status: 200, detail: '' };
        let detail = text.slice(0, 500);
        try {
          const j = JSON.parse(text) as { detail?: string; code?: string; attr?: string };
          detail = [j.code, j.detail, j.attr ? `(attr ${j.attr})` : ''].filter(Boolean).join(': ');
        } catch {
          // not JSON: keep the text
        }
        if (res.status === 401 || res.status === 403)
          throw new ImportAbortedError(`capture refused the api key (HTTP ${res.status}): ${detail}`);
        if (res.status === 400 || res.status === 413) return { status: res.status, detail };
        if (res.status !== 429 && res.status < 500)
          throw new ImportAbortedError(`capture answered HTTP ${res.status}: ${detail}`);
        error = `HTTP ${res.status}: ${detail}`;
        wait = retryAfterMs(res.headers.get('retry-after'));
      } catch (e) {
        if (e instanceof ImportAbortedError) throw e;
        if (opts.signal?.aborted) throw opts.signal.reason;
        error = (e as Error).cause
          ? `${(e as Error).message}: ${String((e as { cause: unknown }).cause)}`
          : (e as Error).message;
        if (!answered)
          throw new ImportAbortedError(
            `cannot reach capture at ${endpoint} (${error}): check --url (the edge, e.g. http://127.0.0.1:8000, or capture itself)`,
          );
      }
      if (attempt >= maxAttempts)
        throw new ImportAbortedError(`gave up after ${maxAttempts} attempts: ${error}`);
      const backoff = Math.min(maxBackoff, initial * 2 ** (attempt - 1)) * (0.75 + Math.random() * 0.5);
      const waitMs = Math.min(60_000, Math.max(wait ?? 0, backoff));
      opts.onRetry?.({ status, attempt, waitMs, error });
      await sleep(waitMs, opts.signal);
    }
  }

  async function send(items: BatchItem[]): Promise<BatchResult> {
    const r = await post(items);
    if (r.status === 200) return { accepted: items.length, refused: [] };
    if (items.length === 1) {
      const reason =
        r.status === 413
          ? `capture refused the event as too large: ${r.detail}`
          : `capture refused the event: ${r.detail}`;
      return { accepted: 0, refused: [{ item: items[0]!, reason }] };
    }
    // In order: the first half is acknowledged before the second is sent.
    const mid = Math.ceil(items.length / 2);
    const a = await send(items.slice(0, mid));
    const b = await send(items.slice(mid));
    return { accepted: a.accepted + b.accepted, refused: [...a.refused, ...b.refused] };
  }

  return { send };
}
