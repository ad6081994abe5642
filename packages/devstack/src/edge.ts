// The local edge: one URL (SETT_PORT) in front of the services for `pnpm start` and tests. It
// routes each path to the service that owns it with the table `pnpm routes` derives from the
// services' route tables (edge-routes.ts), the same routing nginx, Caddy and the Ingress are
// generated from.
//
// Built on maintained HTTP code, no framing of its own: node:http parses the client's messages
// and writes the answers; undici (the client under Node's fetch) keeps a keep-alive pool per
// service and streams to and from it. The edge adds X-Forwarded-For (the client's address
// appended to what came), X-Forwarded-Proto and -Host, and an X-Request-Id when the client sent
// none the services would accept; it drops hop-by-hop fields both ways. Its own answers (404,
// 502, 504, its /_health, refused requests) are JSON and carry an X-Request-Id too.
//
// Deadlines (the services' HTTP_* settings, docs/hardening.md): a client's head must arrive
// within headersMs and its whole request within requestMs, an idle client connection closes
// after keepAliveMs, a service gets connectMs to accept and requestMs to answer. A client that
// goes away before its answer (a FIN or a reset in the middle of its body) aborts the service
// request at once, which destroys that service connection: neither socket is left behind.
//
// Early answers: a service may answer before reading the body (capture's 413 from Content-Length
// alone). The answer is relayed at once; the rest of the client's body is read and dropped for up
// to lingerMs, as nginx's lingering close does, so that a client still sending reads the answer
// instead of a reset connection.
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import { randomUUID } from 'node:crypto';
import type { AddressInfo, Socket } from 'node:net';
import { Readable, type Duplex } from 'node:stream';
import { Pool, type Dispatcher } from 'undici';
import { edgeMatcher, normaliseIp, requestIdOf, type EdgeRouting, type EdgeService } from '@sett/http';
import { EDGE_ROUTING } from './edge-routes';

export type EdgeTarget = EdgeService;

/** Which service the dev edge sends a path to (null: the edge's 404). */
export const routeFor: (pathname: string) => EdgeTarget | null = edgeMatcher(EDGE_ROUTING);

export interface EdgeTimeouts {
  /** HTTP_HEADERS_TIMEOUT_MS: the request head must arrive within this. */
  headersMs: number;
  /** HTTP_REQUEST_TIMEOUT_MS: the whole request within this; also the wait for a service's answer. */
  requestMs: number;
  /** HTTP_KEEP_ALIVE_TIMEOUT_MS: an idle client connection is closed after this. */
  keepAliveMs: number;
  /** Opening a connection to a service. */
  connectMs: number;
  /** After an early answer, how long the rest of the client's body is read and dropped. */
  lingerMs: number;
}

export const DEFAULT_EDGE_TIMEOUTS: EdgeTimeouts = {
  headersMs: 10_000,
  requestMs: 60_000,
  keepAliveMs: 65_000,
  connectMs: 5_000,
  lingerMs: 30_000,
};

export interface EdgeOptions {
  host: string;
  port: number;
  upstreams: Record<EdgeTarget, { host: string; port: number }>;
  timeouts?: Partial<EdgeTimeouts>;
  /** Default: the generated table (edge-routes.ts). */
  routing?: EdgeRouting;
  /** Each service's body limit (bytes), where it is not the default of its setting
   * (CAPTURE_MAX_BODY_BYTES, DECIDE_MAX_BODY_BYTES; management takes 1 MB of JSON). */
  bodyLimits?: Partial<Record<EdgeTarget, number>>;
}

const DEFAULT_BODY_LIMITS: Record<EdgeTarget, number> = {
  capture: 20 * 1024 * 1024,
  decide: 1024 * 1024,
  management: 1024 * 1024,
};
/** How long a body a service will refuse is held back waiting for its answer. */
const HOLD_MS = 1_000;

export interface Edge {
  port: number;
  server: http.Server;
  stop(): Promise<void>;
}

/** Bodies up to this size (by Content-Length) are read whole before the service is called, as
 * nginx buffers them: one write to the service, and a slow client costs the service nothing. */
const BUFFER_BODIES_UP_TO = 64 * 1024;
/** Idle service connections are closed after this (the services keep theirs 65 s). */
const UPSTREAM_IDLE_MS = 4_000;

/** Fields that concern one connection only (RFC 9110 7.6.1), or that the edge sets itself. */
const REQUEST_DROPPED = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'proxy-authorization',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  // node:http answered it (100 Continue) before the body was read.
  'expect',
  'x-forwarded-for',
  'x-forwarded-proto',
  'x-forwarded-host',
  'x-request-id',
]);
const RESPONSE_DROPPED = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'proxy-authenticate',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
]);

function errorJson(type: string, code: string, detail: string): string {
  return JSON.stringify({ type, code, detail, attr: null });
}

/** The edge's own answer, JSON with the request's id. */
function answer(res: ServerResponse, status: number, body: string, requestId: string): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  res.writeHead(status, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(body),
    'x-request-id': requestId,
  });
  res.end(body);
}

/** The request's header fields as the service gets them (raw names, order and repeats kept). */
function upstreamHeaders(req: IncomingMessage, requestId: string): string[] {
  const raw = req.rawHeaders;
  const listed = new Set(
    (req.headers.connection ?? '')
      .toLowerCase()
      .split(',')
      .map((s) => s.trim()),
  );
  const out: string[] = [];
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i]!.toLowerCase();
    if (REQUEST_DROPPED.has(name) || listed.has(name)) continue;
    out.push(raw[i]!, raw[i + 1]!);
  }
  const client = normaliseIp(req.socket.remoteAddress ?? '');
  const forwarded = req.headers['x-forwarded-for'];
  out.push('x-forwarded-for', forwarded ? `${forwarded}, ${client}` : client);
  out.push('x-forwarded-proto', 'http');
  if (req.headers.host !== undefined) out.push('x-forwarded-host', req.headers.host);
  out.push('x-request-id', requestId);
  return out;
}

/**
 * The client's body as a stream undici may destroy without touching the client's socket (it
 * destroys the body it was given when a service answers early or fails).
 *
 * A body the service will refuse for its size is held back: with a Content-Length over the
 * service's limit only its first byte goes (with the head), and without one (chunked) only the
 * limit and one byte. The service answers 413 having read everything sent, so no byte is written
 * into a connection it is closing: such a write would fail (EPIPE) before the answer is read, and
 * the client would get a 502 instead of the 413. HTTP/1.1 has 100-continue for this, but the
 * services send 100 Continue before they look at the head, and undici does not offer it. The
 * rest goes anyway after `holdMs` without an answer (a service whose limit is larger than the
 * edge was told).
 */
function bodyOf(req: IncomingMessage, limit: number, holdMs: number): Readable {
  const declared = Number(req.headers['content-length']);
  let passBeforeHold = Number.isFinite(declared) && declared > limit ? 1 : limit + 1;
  let sent = 0;
  let held: Buffer[] = [];
  let holdTimer: NodeJS.Timeout | undefined;
  const release = () => {
    passBeforeHold = Infinity;
    const rest = held;
    held = [];
    for (const chunk of rest) body.push(chunk);
    if (req.readableEnded) body.push(null);
    else req.resume();
  };
  const body = new Readable({
    read() {
      if (held.length === 0 && passBeforeHold !== sent) req.resume();
    },
    destroy(err, callback) {
      clearTimeout(holdTimer);
      req.off('data', onData);
      req.off('end', onEnd);
      // Whatever of the body is still to come is read and dropped (an early answer), or the
      // socket goes (a failure: the exchange destroys it).
      held = [];
      req.resume();
      callback(err);
    },
  });
  const onData = (chunk: Buffer) => {
    if (held.length > 0 || sent >= passBeforeHold) {
      held.push(chunk);
      return;
    }
    if (sent + chunk.length > passBeforeHold) {
      const head = chunk.subarray(0, passBeforeHold - sent);
      held.push(chunk.subarray(head.length));
      sent += head.length;
      body.push(head);
      req.pause();
      holdTimer = setTimeout(release, holdMs);
      holdTimer.unref();
      return;
    }
    sent += chunk.length;
    if (!body.push(chunk)) req.pause();
  };
  const onEnd = () => {
    if (held.length === 0) body.push(null);
  };
  req.on('data', onData);
  req.on('end', onEnd);
  return body;
}

/** Reads the whole (small) body. Resolves undefined when the client went away first. */
function readSmallBody(req: IncomingMessage): Promise<Buffer | undefined> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(chunks.length === 1 ? chunks[0] : Buffer.concat(chunks)));
    req.on('close', () => {
      if (!req.complete) resolve(undefined);
    });
  });
}

/** One proxied exchange: relays the service's answer and ties the two sockets' fates together. */
class Exchange implements Dispatcher.DispatchHandler {
  private controller: Dispatcher.DispatchController | undefined;
  private done = false;
  private lingerTimer: NodeJS.Timeout | undefined;

  constructor(
    private readonly req: IncomingMessage,
    private readonly res: ServerResponse,
    private readonly requestId: string,
    private readonly lingerMs: number,
  ) {
    // The client went away before its answer was written: abort the service request, which
    // destroys that service connection at once.
    res.once('close', () => {
      clearTimeout(this.lingerTimer);
      if (!this.done) {
        this.done = true;
        this.controller?.abort(new Error('the client went away'));
      }
    });
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.controller = controller;
    if (this.done) controller.abort(new Error('the client went away'));
  }

  onResponseStart(
    controller: Dispatcher.DispatchController,
    statusCode: number,
    headers: Record<string, string | string[] | undefined>,
    statusMessage?: string,
  ): void {
    if (statusCode < 200 || this.done) return; // 1xx: the final answer follows
    const out: Record<string, string | string[]> = {};
    for (const [name, value] of Object.entries(headers))
      if (value !== undefined && !RESPONSE_DROPPED.has(name)) out[name] = value;
    if (statusMessage) this.res.writeHead(statusCode, statusMessage, out);
    else this.res.writeHead(statusCode, out);
    // Answered before the whole body came: read and drop the rest for a bounded time, so the
    // client can read this answer rather than a reset.
    if (!this.req.complete) {
      this.req.resume();
      this.lingerTimer = setTimeout(() => this.req.socket.destroy(), this.lingerMs);
      this.lingerTimer.unref();
      this.req.once('end', () => clearTimeout(this.lingerTimer));
    }
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    if (this.done) return;
    if (!this.res.write(chunk)) {
      controller.pause();
      this.res.once('drain', () => controller.resume());
    }
  }

  onResponseEnd(): void {
    if (this.done) return;
    this.done = true;
    this.res.end();
  }

  onResponseError(_controller: Dispatcher.DispatchController, err: Error & { code?: string }): void {
    if (this.done) return;
    this.done = true;
    if (err.code === 'UND_ERR_HEADERS_TIMEOUT' || err.code === 'UND_ERR_BODY_TIMEOUT') {
      answer(
        this.res,
        504,
        errorJson('server_error', 'gateway_timeout', 'The service did not answer in time.'),
        this.requestId,
      );
    } else {
      answer(
        this.res,
        502,
        errorJson('server_error', 'bad_gateway', `The service is not answering (${err.message}).`),
        this.requestId,
      );
    }
    // A request whose body was still coming cannot be followed by another on this connection.
    if (!this.req.complete) this.req.socket.destroySoon();
  }
}

/** What the edge answers for requests node:http could not parse or that ran out of time. */
function refuse(err: NodeJS.ErrnoException, socket: Duplex): void {
  // A request the client broke off (its FIN in the middle of the body) gets no answer: the
  // socket goes, which aborts the service request too. So does one whose answer has begun.
  const inFlight = (socket as Socket & { _httpMessage?: ServerResponse })._httpMessage;
  const brokenOff = err.code === 'ECONNRESET' || err.code === 'HPE_INVALID_EOF_STATE';
  if (brokenOff || !socket.writable || inFlight?.headersSent) {
    socket.destroy();
    return;
  }
  const [status, reason, detail] =
    err.code === 'HPE_HEADER_OVERFLOW'
      ? [431, 'Request Header Fields Too Large', 'The request head is too large.']
      : err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? [408, 'Request Timeout', 'The request did not arrive in time.']
        : [400, 'Bad Request', 'The request is not valid HTTP/1.1.'];
  const body = errorJson('invalid_request', status === 408 ? 'request_timeout' : 'invalid_http', detail);
  socket.write(
    `HTTP/1.1 ${status} ${reason}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n` +
      `x-request-id: ${randomUUID()}\r\nconnection: close\r\n\r\n${body}`,
  );
  socket.destroy();
}

export async function startEdge(opts: EdgeOptions): Promise<Edge> {
  const timeouts = { ...DEFAULT_EDGE_TIMEOUTS, ...opts.timeouts };
  const match = opts.routing ? edgeMatcher(opts.routing) : routeFor;
  const limits = { ...DEFAULT_BODY_LIMITS, ...opts.bodyLimits };
  const pools = {} as Record<EdgeTarget, Pool>;
  for (const [name, { host, port }] of Object.entries(opts.upstreams) as Array<
    [EdgeTarget, { host: string; port: number }]
  >) {
    pools[name] = new Pool(`http://${host}:${port}`, {
      connectTimeout: timeouts.connectMs,
      headersTimeout: timeouts.requestMs,
      bodyTimeout: timeouts.requestMs,
      keepAliveTimeout: UPSTREAM_IDLE_MS,
      keepAliveMaxTimeout: UPSTREAM_IDLE_MS,
    });
  }

  const serve = (req: IncomingMessage, res: ServerResponse) => {
    const requestId = requestIdOf(req);
    const url = req.url ?? '/';
    const q = url.indexOf('?');
    const pathname = q < 0 ? url : url.slice(0, q);
    if (pathname === '/_health') {
      req.resume();
      answer(res, 200, '{"status":"ok","service":"edge"}', requestId);
      return;
    }
    const target = url.startsWith('/') ? match(pathname) : null;
    if (!target) {
      // The body, if any, is read and dropped by node:http once this answer is sent.
      answer(res, 404, errorJson('invalid_request', 'not_found', 'Not found.'), requestId);
      return;
    }
    const exchange = new Exchange(req, res, requestId, timeouts.lingerMs);
    const dispatch = (body: Buffer | Readable | null) =>
      pools[target].dispatch(
        {
          method: req.method!,
          path: url,
          headers: upstreamHeaders(req, requestId),
          body,
          // Never replayed: capture is not idempotent until the event reaches Postgres.
          idempotent: false,
        },
        exchange,
      );
    const length = Number(req.headers['content-length'] ?? 0);
    const chunked = req.headers['transfer-encoding'] !== undefined;
    if (!chunked && length === 0) {
      req.resume();
      dispatch(null);
    } else if (!chunked && length <= BUFFER_BODIES_UP_TO) {
      void readSmallBody(req).then((body) => {
        if (body) dispatch(body);
      });
    } else dispatch(bodyOf(req, limits[target], HOLD_MS));
  };

  const server = http.createServer(
    {
      headersTimeout: timeouts.headersMs,
      requestTimeout: timeouts.requestMs,
      keepAliveTimeout: timeouts.keepAliveMs,
      // Node checks the two deadlines above on this interval (default 30 s).
      connectionsCheckingInterval: Math.min(1_000, timeouts.headersMs),
      noDelay: true,
    },
    serve,
  );
  // A client that shuts its sending side after a whole request still gets its answer (then the
  // connection closes); a FIN in the middle of a request is a parse error that destroys the
  // socket, which aborts the service request through the exchange.
  (server as http.Server & { httpAllowHalfOpen: boolean }).httpAllowHalfOpen = true;
  server.on('clientError', refuse);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port, opts.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  return {
    port: (server.address() as AddressInfo).port,
    server,
    stop: async () => {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections();
      await closed;
      await Promise.all(Object.values(pools).map((p) => p.destroy()));
    },
  };
}
