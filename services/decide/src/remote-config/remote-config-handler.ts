// GET /array/<token>/config (JSON) and /array/<token>/config.js (script): the remote config
// every page load of every site fetches, served by plain node:http before Express. Per request:
// the token's shape (400), token -> project (in-process cache, else Redis; 404 when unknown),
// the document (in-process copy, else one Redis GET), then ready-made bytes. Preflights and
// other methods fall through to Express (CORS middleware, 404).
import type { IncomingMessage, ServerResponse } from 'node:http';
import {
  NotFoundError,
  ServiceUnavailableError,
  ValidationError,
  prom,
  sendError,
  setCorsHeaders,
} from '@sett/http';
import type { Logger } from '@sett/logger';
import { isWellFormedProjectToken } from '@sett/schemas';
import type { Registry } from 'prom-client';
import type { ProjectResolver } from '../decide/project-resolver';
import { isRemoteConfigToken } from './remote-config-builder';
import type { RemoteConfigStore } from './remote-config-store';

export interface RemoteConfigHandlerDeps {
  projects: ProjectResolver;
  store: RemoteConfigStore;
  logger: Logger;
  requests: prom.Counter<'format' | 'status'>;
}

/** Serves the request and returns true, or returns false for the next handler. */
export type RemoteConfigHandler = (req: IncomingMessage, res: ServerResponse) => boolean;

const JSON_TYPE = 'application/json';
const JS_TYPE = 'application/javascript';
// Browsers and CDNs may keep a document this long; a settings change shows within it.
const CACHE_CONTROL = 'public, max-age=30';
const UNAVAILABLE = 'The project configuration is temporarily unavailable. Please try again later.';

export function createRemoteConfigRequestCounter(registry: Registry): prom.Counter<'format' | 'status'> {
  return new prom.Counter({
    name: 'decide_remote_config_requests_total',
    help: 'Remote config requests (/array/<token>/config[.js]) by format and status',
    labelNames: ['format', 'status'],
    registers: [registry],
  });
}

export function createRemoteConfigHandler(deps: RemoteConfigHandlerDeps): RemoteConfigHandler {
  return (req, res) => {
    const url = req.url ?? '/';
    if (!url.startsWith('/array/') || (req.method !== 'GET' && req.method !== 'HEAD')) return false;
    const q = url.indexOf('?');
    const path = q === -1 ? url : url.slice(0, q);
    const slash = path.indexOf('/', 7);
    if (slash === -1) return false;
    const rest = path.slice(slash);
    const format = rest === '/config' ? 'json' : rest === '/config.js' ? 'js' : undefined;
    if (!format) return false;
    const token = path.slice(7, slash);

    setCorsHeaders(req, res);
    res.setHeader('Vary', 'Origin, Referer');
    const fail = (err: unknown) => {
      deps.requests.inc({ format, status: String(toStatus(err)) });
      sendError(res, err, deps.logger, req);
    };
    // PostHog's rule for the path token, checked before any lookup.
    if (!isRemoteConfigToken(token)) {
      fail(new ValidationError('Invalid token.', 'token', 'invalid_token'));
      return true;
    }
    const unknown = () => new NotFoundError('Project not found for this token.');
    // Longer than any project key can be: unknown without a lookup.
    if (!isWellFormedProjectToken(token)) {
      fail(unknown());
      return true;
    }
    deps.projects
      .resolve(token)
      .catch(() => {
        throw new ServiceUnavailableError(UNAVAILABLE);
      })
      .then(async (project) => {
        if (!project) throw unknown();
        const entry = await deps.store.get(project.teamId, token).catch((err: Error) => {
          deps.logger.warn('could not load remote config', { teamId: project.teamId, err: err.message });
          throw new ServiceUnavailableError(UNAVAILABLE);
        });
        if (!entry) throw unknown();
        const body = format === 'json' ? entry.json : entry.js;
        res.statusCode = 200;
        res.setHeader('Content-Type', format === 'json' ? JSON_TYPE : JS_TYPE);
        res.setHeader('Cache-Control', CACHE_CONTROL);
        res.setHeader('Content-Length', body.length);
        res.end(req.method === 'HEAD' ? undefined : body);
        deps.requests.inc({ format, status: '200' });
      })
      .catch(fail);
    return true;
  };
}

function toStatus(err: unknown): number {
  const status = (err as { status?: unknown })?.status;
  return typeof status === 'number' ? status : 500;
}
