// The local edge: one URL (SETT_PORT) in front of the services, with the routes of
// docs/architecture.md. Production uses nginx or an Ingress with the same table (deploy/nginx).
//
// It forwards HTTP/1.1 messages as bytes over a shared pool of keep-alive connections to the
// services: it reads a request's head (http1-framing.ts), picks the service by path, rewrites
// only the head (X-Forwarded-For/-Proto/-Host, an X-Request-Id when the client sent none, no
// hop-by-hop fields), then streams the body through in whatever framing it came
// (Content-Length or chunked). The service's answer (status line, header fields, body) goes
// back to the client byte for byte. An edge built on node:http (a server plus http.request)
// parsed and re-serialised every message twice and cost as much CPU per request as capture
// itself, which halved throughput through it on a busy machine (bench/edge.bench.ts).
//
// One request at a time per client connection (a pipelined request waits in the buffer until
// the answer before it is complete), so answers keep their order. An early answer (capture's
// 413 from the headers alone, before the body) is relayed at once; the rest of the client's
// body is then read and dropped for a bounded time so the client, still sending, can read the
// answer instead of a reset connection, and that service connection is closed, not reused.
import { randomUUID } from 'node:crypto';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { ChunkedScanner, FramingError, parseHead, type Head } from './http1-framing';

export type EdgeTarget = 'management' | 'capture' | 'decide';

const CAPTURE_PATHS = ['/i/v0/e', '/e', '/capture', '/track', '/batch', '/engage'];

/** SDK reads served by decide, matched with or without a trailing slash. */
const DECIDE_PATHS = [
  '/decide',
  '/flags',
  '/flags/definitions',
  '/api/feature_flag/local_evaluation',
  // The public token-authenticated lists: they win over the rest of /api/ (management).
  '/api/early_access_features',
  '/api/surveys',
  '/api/web_experiments',
  '/api/product_tours',
];

/** Whole subtrees served by decide: remote config and the posthog-js files. */
const DECIDE_PREFIXES = ['/array/', '/static/'];

export function routeFor(pathname: string): EdgeTarget | null {
  const trimmed = pathname.length > 1 && pathname.endsWith('/') ? pathname.slice(0, -1) : pathname;
  if (DECIDE_PATHS.includes(trimmed)) return 'decide';
  if (DECIDE_PREFIXES.some((prefix) => pathname.startsWith(prefix))) return 'decide';
  if (pathname === '/api' || pathname.startsWith('/api/')) return 'management';
  if (CAPTURE_PATHS.includes(trimmed)) return 'capture';
  return null;
}

export interface EdgeOptions {
  host: string;
  port: number;
  upstreams: Record<EdgeTarget, { host: string; port: number }>;
  /** How long the rest of a body the upstream did not want is read and dropped (default 10 s). */
  drainTimeoutMs?: number;
}

export interface Edge {
  port: number;
  stop(): Promise<void>;
}

const MAX_REQUEST_HEAD_BYTES = 64 * 1024;
const MAX_RESPONSE_HEAD_BYTES = 256 * 1024;
/** A client connection with no request in flight is closed after this long without a byte. */
const CLIENT_IDLE_MS = 65_000;
/**
 * Service connections idle longer than this are not reused: Node's servers close idle
 * keep-alive connections after 5 s, and a request written into one as it closes would be lost.
 */
const UPSTREAM_REUSE_MS = 4_000;
/**
 * A body larger than this is held back until the service says 100 Continue (the edge adds the
 * Expect field): a service may refuse it from the headers alone (capture's 413 on
 * Content-Length) and close, and body bytes still being written into that connection would
 * reset it and lose the answer. Smaller bodies go at once: the wait is a round trip.
 */
const EXPECT_CONTINUE_ABOVE = 1024 * 1024;
/** A service that ignores Expect gets the body anyway after this long (as curl does). */
const CONTINUE_WAIT_MS = 1_000;
/** Idle service connections kept per service. */
const MAX_IDLE_PER_TARGET = 256;
/** Request fields the edge replaces or drops: hop-by-hop ones (RFC 9110 7.6.1) and its own. */
const DROPPED = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'upgrade',
  'x-forwarded-for',
  'x-forwarded-proto',
  'x-forwarded-host',
]);
/** An X-Request-Id worth passing on: printable ASCII, bounded; anything else is replaced. */
const REQUEST_ID = /^[\x21-\x7e]{1,200}$/;
const EMPTY = Buffer.alloc(0);

interface UpstreamSocket {
  target: EdgeTarget;
  socket: net.Socket;
  /** The client connection it is serving, or null while idle in the pool. */
  owner: ClientConnection | null;
  idleSince: number;
  closed: boolean;
}

/** One request and its answer on a client connection. */
interface Exchange {
  method: string;
  /** The client keeps the connection after this exchange (HTTP/1.1 default, or 1.0 keep-alive). */
  keepAlive: boolean;
  upstream: UpstreamSocket | null;
  /** Request body still to read: a byte count, or a chunked scanner. */
  bodyLeft: number;
  chunked: ChunkedScanner | null;
  requestDone: boolean;
  /** False once an answer came before the body was read (or for the edge's own answers). */
  forwardBody: boolean;
  /** The edge asked the service for 100 Continue and holds the body until then. */
  awaitingContinue: boolean;
  continueTimer?: NodeJS.Timeout;
  // The answer.
  responseHeadSeen: boolean;
  responseLeft: number;
  responseChunked: ChunkedScanner | null;
  responseUntilClose: boolean;
  responseDone: boolean;
  /** Any answer byte went to the client (after that, a failure can only cut the connection). */
  answered: boolean;
  closeAfter: boolean;
  upstreamBuffer: Buffer;
  drainTimer?: NodeJS.Timeout;
}

function localResponse(status: number, reason: string, body: string, close: boolean): Buffer {
  return Buffer.from(
    `HTTP/1.1 ${status} ${reason}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n` +
      `${close ? 'connection: close\r\n' : ''}\r\n${body}`,
    'latin1',
  );
}

function errorBody(type: string, code: string, detail: string): string {
  return JSON.stringify({ type, code, detail, attr: null });
}

const REASONS: Record<number, string> = {
  400: 'Bad Request',
  404: 'Not Found',
  431: 'Request Header Fields Too Large',
  501: 'Not Implemented',
  502: 'Bad Gateway',
};

class Pool {
  private readonly idle = new Map<EdgeTarget, UpstreamSocket[]>();
  readonly all = new Set<UpstreamSocket>();

  constructor(private readonly upstreams: EdgeOptions['upstreams']) {}

  acquire(target: EdgeTarget, owner: ClientConnection): UpstreamSocket {
    const list = this.idle.get(target);
    const now = Date.now();
    while (list?.length) {
      const up = list.pop()!;
      if (!up.closed && now - up.idleSince < UPSTREAM_REUSE_MS) {
        up.owner = owner;
        return up;
      }
      this.discard(up);
    }
    const { host, port } = this.upstreams[target];
    const socket = net.connect({ host, port, noDelay: true });
    const up: UpstreamSocket = { target, socket, owner, idleSince: now, closed: false };
    this.all.add(up);
    socket.on('data', (chunk: Buffer) => {
      if (up.owner) up.owner.onUpstreamData(up, chunk);
      else this.discard(up); // nothing may arrive on an idle connection
    });
    const gone = (err?: Error) => {
      if (up.closed) return;
      up.closed = true;
      this.all.delete(up);
      up.owner?.onUpstreamClosed(up, err);
    };
    socket.on('error', gone);
    socket.on('end', () => gone());
    socket.on('close', () => gone());
    return up;
  }

  release(up: UpstreamSocket): void {
    up.owner = null;
    if (up.closed) return;
    up.idleSince = Date.now();
    let list = this.idle.get(up.target);
    if (!list) this.idle.set(up.target, (list = []));
    if (list.length >= MAX_IDLE_PER_TARGET) this.discard(up);
    else list.push(up);
  }

  discard(up: UpstreamSocket): void {
    up.owner = null;
    up.closed = true;
    this.all.delete(up);
    up.socket.destroy();
  }

  destroyAll(): void {
    for (const up of this.all) up.socket.destroy();
    this.all.clear();
    this.idle.clear();
  }
}

class ClientConnection {
  private buffer: Buffer = EMPTY;
  private exchange: Exchange | null = null;
  private ended = false;
  private closed = false;

  constructor(
    private readonly client: net.Socket,
    private readonly pool: Pool,
    private readonly drainTimeoutMs: number,
    private readonly forgotten: () => void,
  ) {
    client.setNoDelay(true);
    client.setTimeout(CLIENT_IDLE_MS, () => {
      if (!this.exchange) client.destroy();
    });
    client.on('data', (chunk: Buffer) => {
      this.buffer = this.buffer.length === 0 ? chunk : Buffer.concat([this.buffer, chunk]);
      this.pump();
    });
    client.on('end', () => {
      this.ended = true;
      if (!this.exchange) client.end();
    });
    client.on('error', () => client.destroy());
    client.on('close', () => this.onClientClosed());
  }

  /** Reads as far as the client's bytes allow: heads, then body bytes, exchange by exchange. */
  private pump(): void {
    try {
      while (!this.closed) {
        if (!this.exchange) {
          if (this.buffer.length === 0) return;
          const head = parseHead(this.buffer, MAX_REQUEST_HEAD_BYTES);
          if (!head) return;
          this.buffer = this.buffer.subarray(head.size);
          this.begin(head);
          continue;
        }
        const ex = this.exchange;
        if (!ex.requestDone) {
          if (ex.awaitingContinue) {
            // The body stays in the kernel's buffers until the service asks for it.
            this.client.pause();
            return;
          }
          if (this.buffer.length === 0) return;
          this.readBody(ex);
          if (!ex.requestDone) return;
          if (ex.responseDone) this.finish(ex);
          continue;
        }
        // Waiting for the answer: a pipelined request stays buffered; stop reading past a head's worth.
        if (this.buffer.length > MAX_REQUEST_HEAD_BYTES) this.client.pause();
        return;
      }
    } catch (err) {
      if (!(err instanceof FramingError)) throw err;
      this.refuse(err);
    }
  }

  private begin(head: Head): void {
    const [method = '', target = '', version = ''] = head.startLine.split(' ');
    if (!method || !target.startsWith('/') || !/^HTTP\/1\.[01]$/.test(version))
      throw new FramingError(400, 'Malformed request line.');
    const connection = (head.fields.get('connection') ?? '').toLowerCase();
    const ex: Exchange = {
      method,
      keepAlive: version === 'HTTP/1.1' ? !connection.includes('close') : connection.includes('keep-alive'),
      upstream: null,
      bodyLeft: head.chunked ? 0 : (head.contentLength ?? 0),
      chunked: head.chunked ? new ChunkedScanner() : null,
      requestDone: false,
      forwardBody: true,
      awaitingContinue: false,
      responseHeadSeen: false,
      responseLeft: 0,
      responseChunked: null,
      responseUntilClose: false,
      responseDone: false,
      answered: false,
      closeAfter: false,
      upstreamBuffer: EMPTY,
    };
    ex.requestDone = !ex.chunked && ex.bodyLeft === 0;
    this.exchange = ex;

    const query = target.indexOf('?');
    const pathname = query < 0 ? target : target.slice(0, query);
    if (pathname === '/_health') return this.answerLocally(ex, 200, '{"status":"ok","service":"edge"}');
    const route = routeFor(pathname);
    if (!route) return this.answerLocally(ex, 404, errorBody('invalid_request', 'not_found', 'Not found.'));

    const up = this.pool.acquire(route, this);
    ex.upstream = up;
    const expect = !head.chunked && ex.bodyLeft > EXPECT_CONTINUE_ABOVE && !head.fields.has('expect');
    const rewritten = this.rewriteHead(head, expect);
    if (expect) {
      ex.awaitingContinue = true;
      ex.continueTimer = setTimeout(() => this.continueBody(ex), CONTINUE_WAIT_MS);
      ex.continueTimer.unref();
    }
    if (!expect && !ex.chunked && ex.bodyLeft > 0 && ex.bodyLeft <= this.buffer.length) {
      // The whole body is here already (the usual small request): one write for both.
      up.socket.write(Buffer.concat([rewritten, this.buffer.subarray(0, ex.bodyLeft)]));
      this.buffer = this.buffer.subarray(ex.bodyLeft);
      ex.bodyLeft = 0;
      ex.requestDone = true;
    } else up.socket.write(rewritten);
  }

  /** The request head as the service gets it. */
  private rewriteHead(head: Head, expectContinue: boolean): Buffer {
    let out = `${head.startLine}\r\n`;
    for (let i = 0; i < head.lines.length; i++) {
      const name = head.names[i]!;
      if (DROPPED.has(name) || (name === 'x-request-id' && !REQUEST_ID.test(head.fields.get(name)!)))
        continue;
      out += `${head.lines[i]}\r\n`;
    }
    const client = this.client.remoteAddress ?? '';
    const forwarded = head.fields.get('x-forwarded-for');
    out += `x-forwarded-for: ${forwarded ? `${forwarded}, ${client}` : client}\r\n`;
    out += `x-forwarded-proto: http\r\nx-forwarded-host: ${head.fields.get('host') ?? ''}\r\n`;
    const requestId = head.fields.get('x-request-id');
    if (requestId === undefined || !REQUEST_ID.test(requestId)) out += `x-request-id: ${randomUUID()}\r\n`;
    if (expectContinue) out += 'expect: 100-continue\r\n';
    return Buffer.from(`${out}\r\n`, 'latin1');
  }

  private readBody(ex: Exchange): void {
    let n: number;
    if (ex.chunked) {
      n = ex.chunked.scan(this.buffer, 0);
      ex.requestDone = ex.chunked.done;
    } else {
      n = Math.min(ex.bodyLeft, this.buffer.length);
      ex.bodyLeft -= n;
      ex.requestDone = ex.bodyLeft === 0;
    }
    const part = this.buffer.subarray(0, n);
    this.buffer = this.buffer.subarray(n);
    if (ex.forwardBody && ex.upstream && !ex.upstream.closed) {
      if (!ex.upstream.socket.write(part)) {
        // Backpressure: stop reading the client until the service has taken what it has.
        this.client.pause();
        ex.upstream.socket.once('drain', () => this.client.resume());
      }
    }
  }

  /** The edge's own answer (health, 404): sent at once; a body is read and dropped. */
  private answerLocally(ex: Exchange, status: number, body: string): void {
    ex.forwardBody = false;
    ex.answered = true;
    ex.responseDone = true;
    this.client.write(localResponse(status, REASONS[status] ?? 'OK', body, !ex.keepAlive));
    if (ex.requestDone) this.finish(ex);
  }

  /** A request the edge cannot frame: answered, then the connection is closed. */
  private refuse(err: FramingError): void {
    if (this.exchange?.answered) return void this.client.destroy();
    if (this.exchange?.upstream) this.pool.discard(this.exchange.upstream);
    this.exchange = null;
    this.closed = true;
    this.client.end(
      localResponse(
        err.status,
        REASONS[err.status]!,
        errorBody('invalid_request', 'invalid_http', err.message),
        true,
      ),
    );
  }

  onUpstreamData(up: UpstreamSocket, chunk: Buffer): void {
    const ex = this.exchange;
    if (!ex || ex.upstream !== up || ex.responseDone) return this.pool.discard(up);
    ex.upstreamBuffer = ex.upstreamBuffer.length === 0 ? chunk : Buffer.concat([ex.upstreamBuffer, chunk]);
    try {
      this.relay(ex, up);
    } catch {
      // A service answer the edge cannot frame: nothing sensible can follow on either connection.
      this.pool.discard(up);
      this.client.destroy();
    }
  }

  private relay(ex: Exchange, up: UpstreamSocket): void {
    // Heads and body bytes are contiguous in the buffer: relayed with one write at the end.
    const buf = ex.upstreamBuffer;
    let used = 0;
    let from = 0; // bytes before this are not relayed (a 100 Continue the edge asked for)
    while (!ex.responseHeadSeen) {
      const head = parseHead(used === 0 ? buf : buf.subarray(used), MAX_RESPONSE_HEAD_BYTES);
      if (!head) break;
      used += head.size;
      ex.answered = true;
      const status = Number(head.startLine.slice(9, 12));
      if (status >= 100 && status < 200) {
        if (status === 101) throw new Error('protocol switch');
        if (status === 100 && ex.awaitingContinue) {
          from = used;
          this.continueBody(ex);
        }
        continue; // 100 Continue, 103 Early Hints: the final answer follows
      }
      ex.responseHeadSeen = true;
      if ((head.fields.get('connection') ?? '').toLowerCase().includes('close')) ex.closeAfter = true;
      if (ex.method === 'HEAD' || status === 204 || status === 304) ex.responseDone = true;
      else if (head.chunked) ex.responseChunked = new ChunkedScanner();
      else if (head.contentLength !== null) {
        ex.responseLeft = head.contentLength;
        ex.responseDone = head.contentLength === 0;
      } else ex.responseUntilClose = true;
      if (!ex.requestDone) this.answeredEarly(ex);
    }
    if (ex.responseHeadSeen && !ex.responseDone) {
      if (ex.responseChunked) {
        used += ex.responseChunked.scan(buf, used);
        ex.responseDone = ex.responseChunked.done;
      } else if (ex.responseUntilClose) {
        used = buf.length;
      } else {
        const n = Math.min(ex.responseLeft, buf.length - used);
        used += n;
        ex.responseLeft -= n;
        ex.responseDone = ex.responseLeft === 0;
      }
    }
    if (
      used > from &&
      !this.client.write(from === 0 && used === buf.length ? buf : buf.subarray(from, used))
    ) {
      up.socket.pause();
      this.client.once('drain', () => up.socket.resume());
    }
    ex.upstreamBuffer = used === buf.length ? EMPTY : buf.subarray(used);
    if (ex.responseDone) this.responseComplete(ex, up);
  }

  /** The service answered before it had the whole body: stop sending it; drop the rest. */
  private answeredEarly(ex: Exchange): void {
    ex.forwardBody = false;
    if (ex.awaitingContinue) this.continueBody(ex);
    ex.closeAfter = true;
    ex.drainTimer = setTimeout(() => this.client.destroy(), this.drainTimeoutMs);
    ex.drainTimer.unref();
  }

  private responseComplete(ex: Exchange, up: UpstreamSocket): void {
    ex.upstream = null;
    // Reusable only after a whole request and a whole answer, with nothing left over.
    if (ex.requestDone && ex.forwardBody && !ex.closeAfter && ex.upstreamBuffer.length === 0)
      this.pool.release(up);
    else this.pool.discard(up);
    if (ex.requestDone) this.finish(ex);
  }

  onUpstreamClosed(up: UpstreamSocket, err?: Error): void {
    const ex = this.exchange;
    if (!ex || ex.upstream !== up) return;
    ex.upstream = null;
    if (ex.responseUntilClose && ex.responseHeadSeen) {
      ex.responseDone = true;
      ex.closeAfter = true;
      if (ex.requestDone) this.finish(ex);
      return;
    }
    if (ex.answered) return void this.client.destroy();
    // Nothing answered yet: the service is down or dropped the connection.
    ex.forwardBody = false;
    ex.answered = true;
    ex.responseDone = true;
    ex.closeAfter = true;
    const detail = err
      ? `The service is not answering (${err.message}).`
      : 'The service closed the connection.';
    this.client.write(
      localResponse(502, REASONS[502]!, errorBody('server_error', 'bad_gateway', detail), true),
    );
    if (ex.requestDone) this.finish(ex);
    else this.answeredEarly(ex);
  }

  /** The held-back body may go (or, after an early answer, be read and dropped). */
  private continueBody(ex: Exchange): void {
    if (!ex.awaitingContinue) return;
    ex.awaitingContinue = false;
    clearTimeout(ex.continueTimer);
    this.client.resume();
    // Later, so that an answer being relayed right now is complete before the body moves.
    setImmediate(() => this.pump());
  }

  /** Request and answer both complete: close, or go on with the next request. */
  private finish(ex: Exchange): void {
    clearTimeout(ex.drainTimer);
    clearTimeout(ex.continueTimer);
    this.exchange = null;
    if (ex.closeAfter || !ex.keepAlive || this.ended) {
      this.closed = true;
      this.client.end();
      return;
    }
    if (this.client.isPaused()) this.client.resume();
    if (this.buffer.length > 0) this.pump();
  }

  private onClientClosed(): void {
    this.closed = true;
    const ex = this.exchange;
    this.exchange = null;
    if (ex) {
      clearTimeout(ex.drainTimer);
      clearTimeout(ex.continueTimer);
      if (ex.upstream) this.pool.discard(ex.upstream);
    }
    this.forgotten();
  }
}

export async function startEdge(opts: EdgeOptions): Promise<Edge> {
  const pool = new Pool(opts.upstreams);
  const clients = new Set<net.Socket>();
  // Half-open allowed: a client that shuts its sending side after a request still gets the
  // answer (the connection closes once it is written).
  const server = net.createServer({ noDelay: true, allowHalfOpen: true }, (socket) => {
    clients.add(socket);
    new ClientConnection(socket, pool, opts.drainTimeoutMs ?? 10_000, () => clients.delete(socket));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port, opts.host, resolve);
  });
  return {
    port: (server.address() as AddressInfo).port,
    stop: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        for (const socket of clients) socket.destroy();
        pool.destroyAll();
      }),
  };
}
