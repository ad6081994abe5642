// The hot path: POST /decide and /flags served by plain node:http, without Express routing,
// its body parser and per-request middleware (together about a third of a request's CPU).
// Anything else goes to the Express app (operational routes, preflights, 404/405), and so do
// requests this path does not handle itself: a Content-Encoding body (Express's body reader
// inflates it) and paths only Express's case-insensitive matching accepts. Answers (bodies,
// headers, errors) are the same on both paths: both call the same `answer` and error writer.
import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import { PayloadTooLargeError, sendError, setCorsHeaders } from '@sett/http';
import type { Logger } from '@sett/logger';
import { JSON_CONTENT_TYPE, type DecideAnswerer } from './decide-routes';
import type { Endpoint } from './response-format';

const ENDPOINTS = new Map<string, Endpoint>([
  ['/decide', 'decide'],
  ['/decide/', 'decide'],
  ['/flags', 'flags'],
  ['/flags/', 'flags'],
]);

export interface DecideHandlerDeps {
  answer: DecideAnswerer;
  logger: Logger;
  maxBodyBytes: number;
  /** Everything this path does not serve. */
  fallback: RequestListener;
}

export function createDecideHandler(deps: DecideHandlerDeps): RequestListener {
  return (req, res) => {
    const url = req.url ?? '/';
    const q = url.indexOf('?');
    const endpoint = req.method === 'POST' ? ENDPOINTS.get(q === -1 ? url : url.slice(0, q)) : undefined;
    const encoding = req.headers['content-encoding'];
    if (!endpoint || (encoding !== undefined && encoding.toLowerCase() !== 'identity')) {
      deps.fallback(req, res);
      return;
    }
    setCorsHeaders(req, res);
    const query = q === -1 ? undefined : new URLSearchParams(url.slice(q + 1));
    readBody(req, deps.maxBodyBytes, (err, body) => {
      if (err) {
        sendError(res, err, deps.logger, req);
        return;
      }
      deps
        .answer(endpoint, {
          version: single(query, 'v'),
          compression: single(query, 'compression'),
          config: single(query, 'config'),
          body: body!,
          headers: req.headers,
          remoteAddress: req.socket.remoteAddress,
        })
        .then(
          (json) => send(res, json),
          (error: unknown) => sendError(res, error, deps.logger, req),
        );
    });
  };
}

function send(res: ServerResponse, json: string): void {
  res.statusCode = 200;
  res.setHeader('Content-Type', JSON_CONTENT_TYPE);
  res.setHeader('Content-Length', Buffer.byteLength(json));
  res.end(json);
}

// A query parameter given once; repeated or absent is undefined (Express's parser makes a
// repeated one an array, which the handler ignores the same way).
function single(query: URLSearchParams | undefined, name: string): string | undefined {
  if (!query) return undefined;
  const all = query.getAll(name);
  return all.length === 1 ? all[0] : undefined;
}

// Collects the body up to `limit` bytes. Past the limit (or a Content-Length announcing more)
// the rest is read off and discarded, then 413, as Express's body reader does.
function readBody(req: IncomingMessage, limit: number, done: (err: unknown, body?: Buffer) => void): void {
  const declared = Number(req.headers['content-length']);
  let tooLarge = Number.isFinite(declared) && declared > limit;
  const chunks: Buffer[] = [];
  let size = 0;
  let finished = false;
  const finish = (err: unknown, body?: Buffer) => {
    if (finished) return;
    finished = true;
    done(err, body);
  };
  req.on('data', (chunk: Buffer) => {
    if (tooLarge) return;
    size += chunk.length;
    if (size > limit) {
      tooLarge = true;
      chunks.length = 0;
      return;
    }
    chunks.push(chunk);
  });
  req.on('end', () => {
    if (tooLarge) finish(new PayloadTooLargeError());
    else finish(null, chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size));
  });
  // An aborted request has no one to answer.
  req.on('error', () => {
    finished = true;
  });
}
