// A fetch that the node SDKs use (their `fetch` option), recording every request and answer so a
// test can say exactly which requests failed and which endpoints were called.
export interface Recorded {
  method: string;
  url: string;
  path: string;
  status: number | 'network-error';
  /** Request body (first 500 characters) and response body, kept only for failures. */
  requestBody?: string;
  responseBody?: string;
}

export interface Recorder {
  requests: Recorded[];
  fetch: (url: string, options: RequestInit & { body?: unknown }) => Promise<Response>;
  failures(): Recorded[];
  /** Requests whose path matches. */
  count(path: RegExp): number;
  clear(): void;
}

export function describeRequest(r: Recorded): string {
  const body = r.requestBody ? ` body=${r.requestBody}` : '';
  const answer = r.responseBody ? ` -> ${r.responseBody.slice(0, 600)}` : '';
  return `${r.method} ${r.url}${body} => ${r.status}${answer}`;
}

export function createRecorder(): Recorder {
  const requests: Recorded[] = [];
  const rec: Recorder = {
    requests,
    async fetch(url, options) {
      const method = (options?.method ?? 'GET').toUpperCase();
      const path = new URL(url).pathname;
      try {
        const res = await fetch(url, options as RequestInit);
        const entry: Recorded = { method, url, path, status: res.status };
        if (res.status >= 400) {
          entry.responseBody = await res.clone().text();
          if (typeof options?.body === 'string') entry.requestBody = options.body.slice(0, 500);
        }
        requests.push(entry);
        return res;
      } catch (error) {
        requests.push({ method, url, path, status: 'network-error', responseBody: String(error) });
        throw error;
      }
    },
    failures: () => requests.filter((r) => r.status === 'network-error' || r.status >= 400),
    count: (path) => requests.filter((r) => path.test(r.path)).length,
    clear: () => void requests.splice(0, requests.length),
  };
  return rec;
}
