// GET /array/<token>/config (JSON) and /array/<token>/config.js (script): the remote config
// every page load of every site fetches (routes.ts declares both). Per request: the token's shape
// (400), token -> project (in-process cache, else Redis; 404 when unknown), the document
// (in-process copy, else one Redis GET), then ready-made bytes.
import type { ServerResponse } from 'node:http';
import { NotFoundError, ServiceUnavailableError, ValidationError, prom } from '@sett/http';
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

export type RemoteConfigFormat = 'json' | 'js';

/** Answers 200 on `res`, or throws the SettError to answer with. */
export type RemoteConfigHandler = (
  token: string,
  format: RemoteConfigFormat,
  res: ServerResponse,
) => Promise<void>;

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
  const unknown = () => new NotFoundError('Project not found for this token.');

  const document = async (token: string): Promise<{ json: Buffer; js: Buffer }> => {
    // PostHog's rule for the path token, checked before any lookup.
    if (!isRemoteConfigToken(token)) throw new ValidationError('Invalid token.', 'token', 'invalid_token');
    // Longer than any project key can be: unknown without a lookup.
    if (!isWellFormedProjectToken(token)) throw unknown();
    const project = await deps.projects.resolve(token).catch(() => {
      throw new ServiceUnavailableError(UNAVAILABLE);
    });
    if (!project) throw unknown();
    const entry = await deps.store.get(project.teamId, token).catch((err: Error) => {
      deps.logger.warn('could not load remote config', { teamId: project.teamId, err: err.message });
      throw new ServiceUnavailableError(UNAVAILABLE);
    });
    if (!entry) throw unknown();
    return entry;
  };

  return async (token, format, res) => {
    res.setHeader('Vary', 'Origin, Referer');
    let entry: { json: Buffer; js: Buffer };
    try {
      entry = await document(token);
    } catch (err) {
      deps.requests.inc({ format, status: String(toStatus(err)) });
      throw err;
    }
    const body = format === 'json' ? entry.json : entry.js;
    res.statusCode = 200;
    res.setHeader('Content-Type', format === 'json' ? JSON_TYPE : JS_TYPE);
    res.setHeader('Cache-Control', CACHE_CONTROL);
    res.setHeader('Content-Length', body.length);
    // HEAD: node:http sends the headers only.
    res.end(body);
    deps.requests.inc({ format, status: '200' });
  };
}

function toStatus(err: unknown): number {
  const status = (err as { status?: unknown })?.status;
  return typeof status === 'number' ? status : 500;
}
