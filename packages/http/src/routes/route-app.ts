// Builds a service's HTTP app from its route table, the same way for every service. From each
// declaration it derives: dispatch (Fastify's find-my-way router: trailing slash optional, any
// letter case in the path, parameters keep theirs), 405 with `Allow` for a known path and a
// wrong method, the auth check and scope (before the body is read), body parsing by the
// route's body mode, validation (400 naming the field or query parameter; unknown query
// parameters refused), CORS on every answer and preflights, the metrics `route` label, the
// sampled access log, and one error mapping. The operational routes (/_health, /_ready,
// /_metrics) are added here for every service.
//
// The app is not a server: `listener` is a plain node:http request listener, served by
// startService (service.ts), which owns the socket, its timeouts and the graceful shutdown.
// The listener gives every request its id (X-Request-Id) and logging context first.
import { randomUUID } from 'node:crypto';
import cluster from 'node:cluster';
import http, { type IncomingMessage, type RequestListener, type ServerResponse } from 'node:http';
import Fastify, {
  type FastifyError,
  type FastifyInstance,
  type FastifyReply,
  type FastifyRequest,
  type RouteOptions,
} from 'fastify';
import type client from 'prom-client';
import { buildInfo } from '@sett/config';
import type { Logger } from '@sett/logger';
import { clusterMetrics, shareMetricsWithPrimary } from '../cluster';
import { setPublicCorsHeaders } from '../cors';
import { toSettError } from '../error-middleware';
import {
  MethodNotAllowedError,
  NotFoundError,
  PayloadTooLargeError,
  ServiceUnavailableError,
  SettError,
  UriTooLongError,
  ValidationError,
  type ErrorBody,
} from '../errors';
import { httpRequestObserver, UNMATCHED_ROUTE } from '../metrics';
import { BodyTooLargeError, closesConnection, lingerOnUnreadBody, readBody } from '../read-body';
import { withRequestId } from '../request-id';
import { closeQuerySchema, compileFor, validationFailure, type HttpPart } from './route-validation';
import {
  SerializedJson,
  type AnyRoute,
  type BodyMode,
  type HttpMethod,
  type RouteTable,
} from './route-types';

export type ReadinessCheck = () => Promise<void>;

/** Resolves the caller of a route with a credential, and checks a scope against it. */
export interface Authenticator<A = unknown> {
  /** The caller, or throws AuthenticationError (401). */
  authenticate(request: FastifyRequest): Promise<A>;
  /** Throws ForbiddenError (403) when `auth` may not use `scope` (null: any valid credential). */
  authorize(auth: A, scope: string | null, request: FastifyRequest): void;
}

export interface RouteAppOptions<Deps> {
  name: string;
  logger: Logger;
  registry: client.Registry;
  /** name -> check that throws when the dependency is unreachable (GET /_ready). */
  readiness: Record<string, ReadinessCheck>;
  table: RouteTable<Deps>;
  deps: Deps;
  /** One per credential kind the table uses. */
  authenticators?: Partial<Record<'personal_key' | 'personal_or_secret_key', Authenticator>>;
  /** Runs after a successful authentication, before the body is read (rate limits). */
  afterAuth?(auth: unknown, request: FastifyRequest, reply: FastifyReply): Promise<void>;
  /** Runs on parsed input before schema validation (management's input rules). */
  checkInput?(request: FastifyRequest): void;
  /** The service's own error mapping (e.g. database errors to 503/409), tried before the
   * generic one; undefined leaves the error to it. */
  mapError?(error: unknown): SettError | undefined;
  /** Limit of JSON bodies on the wire (default 1 MB); a route's bodyLimit overrides it. */
  jsonBodyLimit?: number;
  /** Status of a CORS preflight (PostHog's capture answers 200, everything else 204). */
  preflightStatus?: 200 | 204;
  /** The CORS policy of routes that do not name one, and of answers no route gave (404s, bad
   * paths): `public` (capture and decide, read by pages) by default; management is `none`, so a
   * browser reads it only where its table says so (the console is same-origin). */
  defaultCors?: 'public' | 'none';
  /** Validate every answer against the route's response schema; a mismatch is a 500 (tests). */
  checkResponses?: boolean;
  /** The 404 detail for a path no route serves (management names PostHog's endpoints it does
   * not serve); undefined keeps "Not found.". */
  notFoundDetail?(method: string, url: string): string | undefined;
  /** Share of requests written to the access log (0..1); errors (5xx) are always logged. */
  accessLogSampleRate?: number;
  /** Releases what the app's deps hold beyond connections (worker threads), after the server
   * has drained; startService calls it before its closers. */
  onClose?(): Promise<void>;
}

export interface RouteApp {
  fastify: FastifyInstance;
  /** Serve with node:http after `ready()`. */
  listener: RequestListener;
  ready(): Promise<void>;
  /** After the server stopped taking requests (startService calls it). */
  close(): Promise<void>;
}

declare module 'fastify' {
  interface FastifyRequest {
    /** What the route's authenticator returned. */
    auth: unknown;
    /** The first characters of the credential used (access log; never the whole key). */
    keyPrefix: string | undefined;
    requestId: string;
    /** Top-level body fields the route does not know, dropped (PostHog ignores them too). */
    ignoredFields: string[] | undefined;
  }
  interface FastifyContextConfig {
    body?: BodyMode;
    bodyLimit?: number;
    /** The declaration's path, for the metrics label (aliases count under their own path). */
    label?: string;
    /** The declaration's CORS policy (`none`: no CORS headers). */
    cors?: 'public' | 'none';
  }
}

const BODY_METHODS = new Set<HttpMethod>(['POST', 'PUT', 'PATCH', 'DELETE']);
const ALL_METHODS: HttpMethod[] = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'];
const JSON_TYPE = /^application\/(?:[\w.+-]+\+)?json\s*(?:;|$)/i;
const JSON_CONTENT_TYPE = 'application/json; charset=utf-8';
const MULTIPART_TYPE = /^multipart\/form-data\s*(?:;|$)/i;

const isPlainObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** An `upload` route's request that carries a form upload (left for the handler to read). */
export function isUpload(request: FastifyRequest): boolean {
  return MULTIPART_TYPE.test(request.headers['content-type'] ?? '');
}
const DEFAULT_JSON_LIMIT = 1024 * 1024;
/** The longest path parameter routed (ids, keys, uuids are far shorter). */
const MAX_PARAM_LENGTH = 1000;

/** The operational routes every service answers; not in OpenAPI, not behind the edge. */
function operationalRoutes(opts: RouteAppOptions<unknown>): RouteOptions[] {
  shareMetricsWithPrimary(opts.registry);
  const build = buildInfo();
  return [
    {
      method: 'GET',
      url: '/_health',
      handler: async () => ({
        status: 'ok',
        service: opts.name,
        version: build.version,
        git_sha: build.gitSha,
      }),
    },
    {
      method: 'GET',
      url: '/_ready',
      handler: async (_req, reply) => {
        const checks = await runChecks(opts.readiness);
        const ready = Object.values(checks).every((c) => c.ok);
        reply.code(ready ? 200 : 503);
        return { status: ready ? 'ready' : 'not_ready', service: opts.name, checks };
      },
    },
    {
      method: 'GET',
      url: '/_metrics',
      handler: async (_req, reply) => {
        let text: string;
        try {
          // A cluster worker answers with every worker's metrics, summed by the primary.
          text = cluster.isWorker ? await clusterMetrics() : await opts.registry.metrics();
        } catch (err) {
          opts.logger.warn('could not collect metrics', { err: (err as Error).message });
          throw new ServiceUnavailableError('Metrics are not available, retry later.');
        }
        reply.header('Content-Type', opts.registry.contentType).send(text);
      },
    },
  ];
}

async function runChecks(checks: Record<string, ReadinessCheck>, timeoutMs = 2000) {
  const results: Record<string, { ok: boolean; error?: string }> = {};
  await Promise.all(
    Object.entries(checks).map(async ([name, check]) => {
      let timer: NodeJS.Timeout | undefined;
      try {
        await Promise.race([
          check(),
          new Promise((_, reject) => {
            timer = setTimeout(() => reject(new Error(`timed out after ${timeoutMs} ms`)), timeoutMs);
          }),
        ]);
        results[name] = { ok: true };
      } catch (err) {
        results[name] = { ok: false, error: (err as Error).message };
      } finally {
        clearTimeout(timer);
      }
    }),
  );
  return results;
}

/** CORS by the route's policy (else the app's): `public` lets any origin read the answer, with no
 * credentials (no Sett endpoint reads cookies cross-site; the console is served from the same
 * origin); `none` sends no CORS headers. The public policy is cors.ts'. */
function setCors(request: FastifyRequest, reply: FastifyReply, fallback: 'public' | 'none'): void {
  if ((request.routeOptions.config?.cors ?? fallback) === 'none') return;
  // On the node:http response, so that handlers writing it themselves (capture) keep them.
  setPublicCorsHeaders(reply.raw, request.headers.origin);
}

/** A bearer credential masked as Sett shows keys elsewhere (`phx_...abcd`): its kind and last
 * four characters, enough to tell keys apart in a log line, useless to an attacker. */
export function keyPrefixOf(authorization: string | undefined): string | undefined {
  if (!authorization || !/^bearer /i.test(authorization)) return undefined;
  return maskKey(authorization.slice(7).trim());
}

export function maskKey(key: string): string | undefined {
  return key.length >= 16 ? `${key.slice(0, 4)}...${key.slice(-4)}` : undefined;
}

/** Fastify's own errors (body parsing, routing) and everything else, as a SettError or undefined (500). */
function mapError(error: FastifyError & { validationContext?: string }): SettError | undefined {
  if (error.validation) return validationFailure(error.validationContext, error.validation as never);
  const known = toSettError(error);
  if (known) return known;
  switch (error.code) {
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new SettError(
        415,
        'invalid_request',
        'unsupported_media_type',
        'Unsupported Content-Type: send application/json.',
      );
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return new ValidationError(error.message, null, 'invalid_payload');
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new PayloadTooLargeError();
    case 'FST_ERR_HANDLER_TIMEOUT':
      return new ServiceUnavailableError('The request took too long, retry later.');
  }
  return undefined;
}

function errorBody(error: SettError): ErrorBody {
  return error.toJSON();
}

export function createRouteApp<Deps>(opts: RouteAppOptions<Deps>): RouteApp {
  const { logger } = opts;
  const observe = httpRequestObserver(opts.registry);
  const sampleRate = opts.accessLogSampleRate ?? 0;
  const jsonLimit = opts.jsonBodyLimit ?? DEFAULT_JSON_LIMIT;
  const defaultCors = opts.defaultCors ?? 'public';
  let fastifyHandler: RequestListener | undefined;

  const fastify = Fastify({
    logger: false,
    // Our own serialiser: JSON.stringify keeps every field (a response schema is a contract to
    // check, not a filter that silently drops what it does not list).
    serverFactory: (handler) => {
      fastifyHandler = handler as RequestListener;
      return http.createServer();
    },
    routerOptions: {
      ignoreTrailingSlash: true,
      caseSensitive: false,
      maxParamLength: MAX_PARAM_LENGTH,
    },
    exposeHeadRoutes: false,
    frameworkErrors: (error, request, reply) => {
      // A path segment longer than any identifier: 414 before routing (so before any credential
      // is looked at, which is what a server in front would answer too); else bad encoding.
      const err =
        (error as { code?: string }).code === 'FST_ERR_MAX_PARAM_LENGTH'
          ? new UriTooLongError(`A segment of the path is longer than ${MAX_PARAM_LENGTH} characters.`)
          : new ValidationError('The path has malformed percent-encoding.', 'path', 'invalid_path');
      setCors(request as FastifyRequest, reply as FastifyReply, defaultCors);
      // Answered before routing, so without the hooks: counted here, under the unmatched label.
      const started = process.hrtime.bigint();
      reply.raw.once('finish', () =>
        observe(request.method, UNMATCHED_ROUTE, err.status, Number(process.hrtime.bigint() - started) / 1e9),
      );
      (reply as FastifyReply).code(err.status).send(errorBody(err));
    },
  }) as unknown as FastifyInstance;
  fastify.decorateRequest('auth', undefined);
  fastify.decorateRequest('keyPrefix', undefined);
  fastify.decorateRequest('requestId', '');
  fastify.decorateRequest('ignoredFields', undefined);

  // One body reader for every mode: JSON read here with the wire limit (413 as soon as
  // Content-Length or the bytes passed say so), raw and upload bodies left for the handler.
  fastify.removeAllContentTypeParsers();
  fastify.addContentTypeParser('*', (request, _payload, done) => {
    const config = request.routeOptions.config;
    const mode = config.body ?? 'json';
    // An upload route takes JSON too: only a multipart form is left for its handler.
    if (mode === 'raw' || (mode === 'upload' && isUpload(request))) {
      done(null, undefined);
      return;
    }
    const type = request.headers['content-type'];
    if (type !== undefined && !JSON_TYPE.test(type)) {
      done(
        new SettError(
          415,
          'invalid_request',
          'unsupported_media_type',
          `Unsupported Content-Type '${type.slice(0, 100)}': send application/json.`,
        ),
      );
      return;
    }
    readBody(request.raw, config.bodyLimit ?? jsonLimit).then(
      (raw) => {
        if (raw.length === 0) return done(null, undefined);
        try {
          done(null, JSON.parse(raw.toString('utf8')));
        } catch {
          done(new ValidationError('Malformed request body: not valid JSON.', null, 'invalid_payload'));
        }
      },
      (error: Error) => done(error),
    );
  });

  fastify.setValidatorCompiler(({ schema, httpPart }) => compileFor(httpPart as HttpPart, schema));
  fastify.setSerializerCompiler(() => (data) => JSON.stringify(data));

  fastify.addHook('onRequest', async (request, reply) => {
    request.requestId = (request.raw as IncomingMessage & { settRequestId?: string }).settRequestId ?? '';
    request.keyPrefix = keyPrefixOf(request.headers.authorization);
    setCors(request, reply, defaultCors);
  });

  fastify.addHook('onResponse', async (request, reply) => {
    const route = request.routeOptions.config.label ?? UNMATCHED_ROUTE;
    const seconds = reply.elapsedTime / 1000;
    observe(request.method, route, reply.statusCode, seconds);
    if (sampleRate > 0 && (sampleRate >= 1 || Math.random() < sampleRate)) {
      logger.access({
        request_id: request.requestId,
        method: request.method,
        route,
        status: reply.statusCode,
        ms: Math.round(seconds * 1000 * 10) / 10,
        bytes: Number(reply.getHeader('content-length') ?? 0),
        key_prefix: request.keyPrefix,
        ...(request.ignoredFields ? { ignored_fields: request.ignoredFields.slice(0, 20).join(',') } : {}),
      });
    }
  });

  fastify.setNotFoundHandler((request, reply) => {
    const detail = opts.notFoundDetail?.(request.method, request.url);
    reply.code(404).send(errorBody(new NotFoundError(detail)));
  });

  fastify.setErrorHandler(async (error: FastifyError, request, reply) => {
    const known = opts.mapError?.(error) ?? mapError(error);
    // A body the mechanism left unread (413 as soon as Content-Length said so, 415): read and
    // drop the rest, bounded, instead of closing the connection under a client still sending
    // (Fastify asks for a close after a body error), which resets it before the client reads the
    // answer. A `raw` route's handler owns its body and its answer (capture closes).
    const mechanismBody = (request.routeOptions.config.body ?? 'json') !== 'raw';
    if (
      mechanismBody &&
      !request.raw.complete &&
      (closesConnection(known ?? error) || known?.status === 415)
    ) {
      reply.removeHeader('connection');
      // A keep-alive connection is answered at once and stays open while the rest is dropped.
      // One the client asked to close is closed by Node as soon as the answer is written, so
      // there the rest is dropped first; past the bounds the connection is gone, with no one
      // left to answer.
      const clientCloses =
        request.raw.httpVersionMinor === 0 || /\bclose\b/i.test(request.headers.connection ?? '');
      if (!clientCloses) void lingerOnUnreadBody(request.raw);
      else if (!(await lingerOnUnreadBody(request.raw))) return reply.hijack();
    } else if (closesConnection(known ?? error)) reply.header('Connection', 'close');
    if (known) {
      logger.debug('request rejected', {
        method: request.method,
        route: request.routeOptions.config.label,
        status: known.status,
        code: known.code,
      });
      for (const [name, value] of Object.entries(known.headers)) reply.header(name, value);
      return reply.code(known.status).send(errorBody(known));
    }
    const errorId = randomUUID();
    logger.error('unhandled error', {
      error_id: errorId,
      method: request.method,
      route: request.routeOptions.config.label,
      err: error,
    });
    const body: ErrorBody = {
      type: 'server_error',
      code: 'error',
      detail: 'A server error occurred.',
      attr: null,
      error_id: errorId,
    };
    return reply.code(500).send(body);
  });

  // Read by probes and Prometheus, never by a page: no CORS.
  for (const r of operationalRoutes(opts as RouteAppOptions<unknown>))
    fastify.route({ ...r, config: { label: r.url, cors: 'none' } });
  registerTable(fastify, opts);

  const ready = Promise.resolve(fastify.ready()).then(() => undefined);
  const serveRaw = rawFastPaths(opts, {
    observe,
    sampleRate,
    answerError: async (error, req, res) => {
      const known = opts.mapError?.(error) ?? mapError(error as FastifyError);
      if (!known) {
        const errorId = randomUUID();
        logger.error('unhandled error', { error_id: errorId, method: req.method, url: req.url, err: error });
        return writeJson(res, 500, {
          type: 'server_error',
          code: 'error',
          detail: 'A server error occurred.',
          attr: null,
          error_id: errorId,
        });
      }
      // A raw route's body is its handler's: one left unread closes the connection (as capture),
      // except that a client which asked to close gets the rest read and dropped first, else
      // Node closes under its writes and it never reads the answer (lingerOnUnreadBody).
      if (closesConnection(error)) {
        const clientCloses = req.httpVersionMinor === 0 || /\bclose\b/i.test(req.headers.connection ?? '');
        if (clientCloses && !req.complete && !(await lingerOnUnreadBody(req))) return;
        res.setHeader('Connection', 'close');
      }
      for (const [name, value] of Object.entries(known.headers)) res.setHeader(name, value);
      writeJson(res, known.status, errorBody(known));
    },
  });
  const listener: RequestListener = (req: IncomingMessage, res: ServerResponse) =>
    withRequestId(req, res, (id) => {
      (req as IncomingMessage & { settRequestId?: string }).settRequestId = id;
      if (serveRaw?.(req, res, id)) return;
      fastifyHandler!(req, res);
    });
  return {
    fastify,
    listener,
    ready: () => ready,
    close: async () => {
      await opts.onClose?.();
    },
  };
}

function writeJson(res: ServerResponse, status: number, body: unknown): void {
  const json = JSON.stringify(body);
  res.statusCode = status;
  res.setHeader('Content-Type', JSON_CONTENT_TYPE);
  res.setHeader('Content-Length', Buffer.byteLength(json));
  res.end(json);
}

interface RawPathTools {
  observe: ReturnType<typeof httpRequestObserver>;
  sampleRate: number;
  answerError(error: unknown, req: IncomingMessage, res: ServerResponse): Promise<void>;
}

/**
 * Routes declared `rawFastPath` (docs/architecture.md, "HTTP routes": only where `pnpm bench`
 * showed the router costing over 5% on them) are served in front of Fastify when the request is
 * spelled exactly as declared (method, path with or without its trailing slash): the same
 * handler with the same CORS, metrics label, access line and error answers, without Fastify's
 * per-request objects and hooks. Other spellings (letter case) still reach the route through
 * Fastify. Such a route takes no path parameters and no credential the mechanism checks, reads
 * its own body, and has an open query string (nothing for the mechanism to validate).
 */
function rawFastPaths<Deps>(
  opts: RouteAppOptions<Deps>,
  tools: RawPathTools,
): ((req: IncomingMessage, res: ServerResponse, requestId: string) => boolean) | undefined {
  const byPath = new Map<string, AnyRoute<Deps>>();
  for (const r of opts.table.routes) {
    if (!r.rawFastPath) continue;
    const query = r.schema.querystring as { additionalProperties?: unknown } | undefined;
    if (
      r.body !== 'raw' ||
      r.url.includes(':') ||
      (r.auth.kind !== 'none' && r.auth.kind !== 'project_token') ||
      query?.additionalProperties !== true
    )
      throw new Error(
        `${opts.name}: ${r.method} ${r.url} cannot be a raw fast path (raw body, no path parameters, no mechanism auth, open query)`,
      );
    for (const url of [r.url, ...(r.aliases ?? [])]) {
      const bare = url.endsWith('/') ? url.slice(0, -1) : url;
      byPath.set(`${r.method} ${bare}`, r);
      byPath.set(`${r.method} ${bare}/`, r);
    }
  }
  if (byPath.size === 0) return undefined;
  const { logger } = opts;

  return (req, res, requestId) => {
    const url = req.url ?? '/';
    const q = url.indexOf('?');
    const r = byPath.get(`${req.method} ${q === -1 ? url : url.slice(0, q)}`);
    if (!r) return false;
    const started = process.hrtime.bigint();
    if ((r.cors ?? opts.defaultCors ?? 'public') === 'public') setPublicCorsHeaders(res, req.headers.origin);
    // Counted and logged once answered: straight after end() on the usual path (the time to the
    // answer, not to its last byte leaving), on 'finish' where something else wrote it. A
    // listener per request cost more than the rest of the mechanism put together.
    const answered = () => {
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      tools.observe(req.method ?? 'POST', r.url, res.statusCode, seconds);
      if (tools.sampleRate > 0 && (tools.sampleRate >= 1 || Math.random() < tools.sampleRate))
        logger.access({
          request_id: requestId,
          method: req.method,
          route: r.url,
          status: res.statusCode,
          ms: Math.round(seconds * 1000 * 10) / 10,
          bytes: Number(res.getHeader('content-length') ?? 0),
        });
    };
    const whenFinished = () => (res.writableFinished ? answered() : res.once('finish', answered));
    const ctx = {
      params: {},
      query: undefined,
      body: undefined,
      auth: undefined,
      request: { raw: req, url, headers: req.headers, method: req.method } as unknown as FastifyRequest,
      reply: { raw: res } as unknown as FastifyReply,
    };
    let pending: Promise<unknown>;
    try {
      pending = Promise.resolve(r.handler(ctx, opts.deps));
    } catch (error) {
      pending = Promise.reject(error);
    }
    pending.then(
      (result) => {
        if (res.writableEnded) return whenFinished();
        const json = result instanceof SerializedJson ? result.json : JSON.stringify(result);
        res.statusCode = r.status ?? 200;
        if (!res.hasHeader('content-type')) res.setHeader('Content-Type', JSON_CONTENT_TYPE);
        res.setHeader('Content-Length', Buffer.byteLength(json));
        res.end(json);
        answered();
      },
      (error: unknown) => {
        whenFinished();
        return tools.answerError(error, req, res);
      },
    );
    return true;
  };
}

function registerTable<Deps>(fastify: FastifyInstance, opts: RouteAppOptions<Deps>): void {
  const byPath = new Map<string, AnyRoute<Deps>[]>();
  for (const r of opts.table.routes) {
    for (const url of [r.url, ...(r.aliases ?? [])]) {
      const list = byPath.get(url) ?? [];
      list.push(r);
      byPath.set(url, list);
      fastify.route(toFastifyRoute(r, url, opts));
    }
  }
  // Every known path answers the methods it does not serve with 405 and `Allow`, and
  // preflights with the methods it does serve (HEAD wherever GET is: toFastifyRoute).
  for (const [url, routes] of byPath) {
    const served = routes.map((r) => r.method);
    const listed = served.flatMap((m) => (m === 'GET' ? ['GET', 'HEAD'] : [m]));
    const allow = [...listed, 'OPTIONS'].join(', ');
    const others: string[] = ALL_METHODS.filter((m) => !served.includes(m));
    if (!served.includes('GET')) others.push('HEAD');
    const first = routes[0]!;
    const cors = first.cors ?? opts.defaultCors ?? 'public';
    if (others.length > 0) {
      fastify.route({
        method: others,
        url,
        config: { label: url, body: 'raw', cors },
        onRequest: authHooks({ auth: anyCredential(first.auth) }, opts),
        handler: async (request) => {
          // The method as sent: Fastify reports a HEAD request as GET.
          throw new MethodNotAllowedError(request.raw.method ?? request.method, [...listed, 'OPTIONS']);
        },
      });
    }
    fastify.route({
      method: 'OPTIONS',
      url,
      config: { label: url, body: 'raw', cors },
      handler: async (request, reply) => {
        reply.header('Allow', allow);
        if (cors === 'none') return reply.code(204).send();
        reply.header('Access-Control-Allow-Methods', allow);
        reply.header(
          'Access-Control-Allow-Headers',
          request.headers['access-control-request-headers'] ??
            'Authorization, Content-Type, Content-Encoding, X-Requested-With, X-CSRFToken',
        );
        reply.header('Access-Control-Max-Age', '86400');
        return reply.code(opts.preflightStatus ?? 204).send();
      },
    });
  }
}

/** The 405 route of a path checks a credential like its siblings do (PostHog authenticates
 * before it looks at the method), with no scope. */
function anyCredential(auth: AnyRoute<unknown>['auth']): AnyRoute<unknown>['auth'] {
  if (auth.kind === 'personal_key') return { kind: 'personal_key', scope: null };
  return auth;
}

function authHooks<Deps>(r: Pick<AnyRoute<Deps>, 'auth'>, opts: RouteAppOptions<Deps>) {
  const auth = r.auth;
  if (auth.kind !== 'personal_key' && auth.kind !== 'personal_or_secret_key') return [];
  if (auth.kind === 'personal_or_secret_key' && auth.checkedBy === 'handler') return [];
  const authenticator = opts.authenticators?.[auth.kind];
  if (!authenticator) throw new Error(`${opts.name}: no authenticator for auth kind ${auth.kind}`);
  return [
    async (request: FastifyRequest, reply: FastifyReply) => {
      const who = await authenticator.authenticate(request);
      authenticator.authorize(who, auth.scope, request);
      request.auth = who;
      if (opts.afterAuth) await opts.afterAuth(who, request, reply);
    },
  ];
}

function toFastifyRoute<Deps>(r: AnyRoute<Deps>, url: string, opts: RouteAppOptions<Deps>): RouteOptions {
  const status = r.status ?? 200;
  const mode: BodyMode = r.body ?? 'json';
  const schema: Record<string, unknown> = {
    querystring: closeQuerySchema(r.schema.querystring as object | undefined),
  };
  if (r.schema.params) schema.params = r.schema.params;
  // An upload route's schema checks its JSON bodies (below); its handler checks what it makes
  // of a form.
  if (r.schema.body && mode === 'json') schema.body = r.schema.body;
  const validateUploadJson =
    mode === 'upload' && r.schema.body ? compileFor('body', r.schema.body as object) : undefined;
  const bodySchema = r.schema.body as { additionalProperties?: unknown; properties?: object } | undefined;
  const knownFields =
    (mode === 'json' || mode === 'upload') &&
    bodySchema?.additionalProperties === false &&
    r.unknownBodyFields !== 'refuse'
      ? new Set(Object.keys(bodySchema.properties ?? {}))
      : undefined;
  const checkResponse = opts.checkResponses && r.schema.response?.[status];
  const validateResponse = checkResponse ? compileFor('body', checkResponse as object) : undefined;

  return {
    method: r.method,
    url,
    // HEAD of a GET route: the GET's status and headers (Content-Length included), no body.
    exposeHeadRoute: r.method === 'GET',
    schema,
    config: { label: url, body: mode, bodyLimit: r.bodyLimit, cors: r.cors ?? opts.defaultCors ?? 'public' },
    onRequest: authHooks(r, opts),
    preValidation: [
      async (request: FastifyRequest) => {
        // A JSON route called without a body validates an empty object, as PostHog's
        // serializers treat a missing body.
        const form = mode === 'upload' && isUpload(request);
        if (
          (mode === 'json' || (mode === 'upload' && !form)) &&
          BODY_METHODS.has(r.method) &&
          request.body === undefined &&
          r.schema.body
        )
          request.body = {};
        // PostHog's API ignores fields it does not know, and clients built for it send some:
        // a top-level field the body schema does not list is dropped and named in the access
        // line (unknownBodyFields, route-types.ts).
        if (knownFields && BODY_METHODS.has(r.method) && isPlainObject(request.body)) {
          const body = request.body as Record<string, unknown>;
          for (const field of Object.keys(body))
            if (!knownFields.has(field)) {
              delete body[field];
              (request.ignoredFields ??= []).push(field.slice(0, 100));
            }
        }
        opts.checkInput?.(request);
        if (validateUploadJson && !form && !validateUploadJson(request.body))
          throw validationFailure('body', validateUploadJson.errors ?? []);
      },
    ],
    handler: async (request, reply) => {
      const result = await r.handler(
        {
          params: request.params as never,
          query: request.query as never,
          body: request.body as never,
          auth: request.auth,
          request,
          reply,
        },
        opts.deps,
      );
      if (reply.sent) return reply;
      if (status === 204) return reply.code(204).send();
      const serialized = result instanceof SerializedJson ? result.json : undefined;
      if (
        validateResponse &&
        !validateResponse(serialized === undefined ? result : JSON.parse(String(serialized)))
      ) {
        throw new Error(
          `response of ${r.method} ${url} does not match its schema: ${JSON.stringify(validateResponse.errors)}`,
        );
      }
      // Fastify sends a string as it is: an answer that is a JSON string is serialised here.
      if (typeof result === 'string')
        return reply.code(status).type(JSON_CONTENT_TYPE).send(JSON.stringify(result));
      if (serialized === undefined) return reply.code(status).send(result);
      if (!reply.hasHeader('content-type')) reply.type(JSON_CONTENT_TYPE);
      return reply.code(status).send(serialized);
    },
  };
}

export { BodyTooLargeError };
