// GET /flags/definitions and /api/feature_flag/local_evaluation: the flag definitions server
// SDKs poll for local evaluation, every 30 s from every server. Top to bottom: key shape, token
// -> project (in-process cache, else Redis, else Postgres) and key -> credential (in-process
// cache, else one Postgres query) together, authorization, the flag list (in-process copy,
// else one Redis MGET), the body serialised once per list version (local-evaluation-body.ts),
// then 304 when If-None-Match holds its ETag, else 200. The routes are declared without CORS
// (routes.ts): no answer carries CORS headers, and a preflight gets 204 without them.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Pool } from 'pg';
import {
  AuthenticationError,
  clientIp,
  RateLimitedError,
  ServiceUnavailableError,
  ValidationError,
  prom,
  type ClientIpOptions,
} from '@sett/http';
import type { Logger } from '@sett/logger';
import { isWellFormedProjectToken } from '@sett/schemas';
import type { Registry } from 'prom-client';
import { FLAGS_UNAVAILABLE_DETAIL } from '../decide/decide-service';
import { createPostgresDeadline } from '../decide/postgres-deadline';
import type { ProjectResolver } from '../decide/project-resolver';
import type { FlagStore } from '../flags/flag-store';
import { authorize, createKeyVerifier, parseKeyHeader } from './local-evaluation-auth';
import { createLocalEvaluationBodies, etagMatches, type LocalEvaluationBody } from './local-evaluation-body';

const INVALID_TOKEN_DETAIL =
  'Project API key invalid. You can find your project API key in your project settings.';

export interface LocalEvaluationDeps {
  flagStore: FlagStore;
  projects: ProjectResolver;
  /** For key lookups on a cache miss. */
  pool: Pool;
  /** How long a key lookup (found or not) is remembered; default 5 s. */
  keyCacheTtlMs?: number;
  logger: Logger;
  registry: Registry;
  /** How long one request waits for Postgres in total. */
  postgresBudgetMs: number;
  /** How the client address (the unknown-key limit's key) is read; default: the socket's peer. */
  clientIp?: ClientIpOptions;
}

/** Answers one request on `res` (200 or 304), or throws the SettError to answer with. */
export type LocalEvaluationHandler = (req: IncomingMessage, res: ServerResponse) => Promise<void>;

export function createLocalEvaluationHandler(deps: LocalEvaluationDeps): LocalEvaluationHandler {
  const requests = new prom.Counter({
    name: 'decide_local_evaluation_requests_total',
    help: 'Local evaluation (flag definitions) requests by status',
    labelNames: ['status'],
    registers: [deps.registry],
  });
  const keys = createKeyVerifier({ pool: deps.pool, ttlMs: deps.keyCacheTtlMs ?? 5_000 });
  // The cohorts travel with the flag list (flag-store.ts): the body memo is keyed on both.
  const bodies = createLocalEvaluationBodies();

  async function definitions(req: IncomingMessage, query: URLSearchParams): Promise<LocalEvaluationBody> {
    const key = parseKeyHeader(req.headers.authorization);
    const tokens = query.getAll('token');
    const token = tokens.length === 1 ? tokens[0]!.trim() : undefined;
    if (token !== undefined && !isWellFormedProjectToken(token))
      throw new AuthenticationError(INVALID_TOKEN_DETAIL, 'invalid_api_key');
    if (token === undefined && key.kind === 'personal')
      throw new ValidationError(
        'The token query parameter (project API key) is required.',
        'token',
        'required',
      );

    const deadline = createPostgresDeadline(deps.postgresBudgetMs);
    try {
      const [project, credential] = await Promise.all([
        token === undefined ? undefined : deadline.race(deps.projects.resolve(token)),
        keys.verify(key, deadline.race, clientIp(req.headers, req.socket.remoteAddress, deps.clientIp)),
      ]).catch((err: unknown) => {
        if (err instanceof RateLimitedError) throw err;
        throw new ServiceUnavailableError(FLAGS_UNAVAILABLE_DETAIL);
      });
      if (!credential) throw new AuthenticationError('API key is invalid.', 'authentication_failed');
      if (project === null) throw new AuthenticationError(INVALID_TOKEN_DETAIL, 'invalid_api_key');
      // A secret key without a token reads its own project.
      const teamId = project ? project.teamId : (credential as { teamId: number }).teamId;
      if (project) authorize(credential, project);

      let flags;
      try {
        flags = (await deps.flagStore.load(teamId, deadline.race)).project;
      } catch (err) {
        deps.logger.warn('could not load flag definitions', { teamId, err: (err as Error).message });
        throw new ServiceUnavailableError(FLAGS_UNAVAILABLE_DETAIL);
      }
      return bodies(flags, query.has('send_cohorts'));
    } finally {
      deadline.clear();
    }
  }

  return async (req, res) => {
    const url = req.url ?? '/';
    const q = url.indexOf('?');
    let body: LocalEvaluationBody;
    try {
      body = await definitions(req, new URLSearchParams(q === -1 ? '' : url.slice(q + 1)));
    } catch (err) {
      const status = (err as { status?: unknown }).status;
      requests.inc({ status: typeof status === 'number' ? String(status) : '500' });
      throw err;
    }
    const notModified = etagMatches(req.headers['if-none-match'], body.etag);
    requests.inc({ status: notModified ? '304' : '200' });
    if (notModified) {
      res.writeHead(304, { ETag: body.etag, 'Cache-Control': 'private, no-cache' });
      res.end();
      return;
    }
    res.writeHead(200, {
      'Content-Type': 'application/json; charset=utf-8',
      'Content-Length': body.bytes.length,
      ETag: body.etag,
      'Cache-Control': 'private, no-cache',
    });
    res.end(body.bytes);
  };
}
