// POST /decide (v=1..4) and /flags (v=1, v=2): decode the body whatever its encoding, check the
// project key and distinct_id, evaluate, answer in the shape the version asks for. `answer` is
// the whole request minus transport; it is served by the plain node:http fast path
// (decide-handler.ts) and, for what that path hands over (Content-Encoding bodies, paths that
// only Express's case-insensitive routing matches), by the Express routes below.
import type { IncomingHttpHeaders } from 'node:http';
import express, { type Request, type Response, type Router } from 'express';
import { AuthenticationError, MethodNotAllowedError, ValidationError } from '@sett/http';
import { describeAjvError, validateDecide } from '@sett/schemas';
import { clientIp } from '../geoip/geoip';
import { decodeDecideBody } from './body-decoding';
import type { DecideMetrics } from './decide-metrics';
import type { DecideService } from './decide-service';
import type { ProjectResolver } from './project-resolver';
import { formatResponseJson, responseShape, type Endpoint } from './response-format';

export interface DecideRoutesDeps {
  service: DecideService;
  projects: ProjectResolver;
  metrics: DecideMetrics;
  geoipEnabled: boolean;
  maxBodyBytes: number;
}

export interface DecideRequest {
  /** The `v` and `compression` query parameters (strings when given once, else ignored). */
  version: unknown;
  compression: unknown;
  /** Raw body, already inflated when the request had a Content-Encoding. */
  body: Buffer;
  headers: IncomingHttpHeaders;
  remoteAddress: string | undefined;
}

export type DecideAnswerer = (endpoint: Endpoint, req: DecideRequest) => Promise<string>;

export const JSON_CONTENT_TYPE = 'application/json; charset=utf-8';

const INVALID_KEY_DETAIL =
  'Project API key invalid. You can find your project API key in your project settings.';

/** One request to its serialised JSON answer; throws SettErrors for 4xx answers. */
export function createDecideAnswerer(deps: DecideRoutesDeps): DecideAnswerer {
  return async (endpoint, req) => {
    const started = process.hrtime.bigint();
    const shape = responseShape(endpoint, req.version);
    let outcome = 'ok';
    try {
      const body = await decodeDecideBody({
        body: req.body,
        contentType: req.headers['content-type'],
        compression: typeof req.compression === 'string' ? req.compression : undefined,
        maxBytes: deps.maxBodyBytes,
      });

      const token = nonEmptyString(body.api_key) ?? nonEmptyString(body.token) ?? nonEmptyString(body.$token);
      if (!token)
        throw new AuthenticationError(`API key not provided. ${INVALID_KEY_DETAIL}`, 'invalid_api_key');
      const project = await deps.projects.resolve(token);
      if (!project) throw new AuthenticationError(INVALID_KEY_DETAIL, 'invalid_api_key');

      const distinctId = body.distinct_id;
      if (distinctId === undefined || distinctId === null || String(distinctId).trim() === '') {
        throw new ValidationError(
          'The distinct_id field is missing from the request.',
          'distinct_id',
          'required',
        );
      }
      if (!validateDecide(body)) {
        const problem = describeAjvError(validateDecide.errors);
        throw new ValidationError(problem.detail, problem.attr);
      }

      const groups: Record<string, string> = {};
      for (const [type, key] of Object.entries(body.groups ?? {})) groups[type] = String(key);
      const anon = body.$anon_distinct_id;
      const result = await deps.service.evaluate({
        project,
        distinctId: String(distinctId),
        anonDistinctId: anon === undefined || anon === null || anon === '' ? undefined : String(anon),
        personProperties: (body.person_properties ?? {}) as Record<string, unknown>,
        groups,
        groupProperties: (body.group_properties ?? {}) as Record<string, Record<string, unknown>>,
        ip:
          deps.geoipEnabled && body.geoip_disable !== true
            ? clientIp(req.headers['x-forwarded-for'], req.remoteAddress)
            : undefined,
        disableFlags: body.disable_flags === true,
      });
      if (result.errorsWhileComputingFlags) outcome = 'partial';
      if (result.quotaLimited) outcome = 'quota_limited';
      return formatResponseJson(shape, result);
    } catch (err) {
      outcome = 'rejected';
      throw err;
    } finally {
      deps.metrics.requests.inc({ endpoint, shape, outcome });
      deps.metrics.latency.observe({ endpoint }, Number(process.hrtime.bigint() - started) / 1e9);
    }
  };
}

export function decideRoutes(deps: DecideRoutesDeps, answer = createDecideAnswerer(deps)): Router {
  const router = express.Router();
  // Raw bytes of any content type: the handler decides how they are encoded. Content-Encoding
  // gzip/deflate is undone here, with the limit applying to the inflated size.
  const rawBody = express.raw({ type: () => true, limit: deps.maxBodyBytes, inflate: true });

  const handle = (endpoint: Endpoint) => async (req: Request, res: Response) => {
    const json = await answer(endpoint, {
      version: req.query.v,
      compression: req.query.compression,
      body: Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0),
      headers: req.headers,
      remoteAddress: req.socket.remoteAddress,
    });
    res.set('Content-Type', JSON_CONTENT_TYPE).send(json);
  };

  for (const endpoint of ['decide', 'flags'] as const) {
    const paths = [`/${endpoint}`, `/${endpoint}/`];
    router.post(paths, rawBody, handle(endpoint));
    router.all(paths, (req) => {
      throw new MethodNotAllowedError(req.method, ['POST', 'OPTIONS']);
    });
  }
  return router;
}

function nonEmptyString(value: unknown): string | undefined {
  return typeof value === 'string' && value.trim() !== '' ? value.trim() : undefined;
}
