// POST /decide (v=1..4) and /flags (v=1, v=2): decode the body whatever its encoding, check the
// project key and distinct_id, evaluate, answer in the shape the version asks for. `answer` is
// the whole request minus transport, served by decide's route table (routes.ts).
import type { IncomingHttpHeaders } from 'node:http';
import {
  AuthenticationError,
  clientIp,
  ServiceUnavailableError,
  ValidationError,
  type ClientIpOptions,
  type DecompressionBudget,
} from '@sett/http';
import {
  MAX_JSON_DEPTH,
  describeAjvError,
  exceedsDepth,
  isUuid,
  isWellFormedProjectToken,
  validateDecide,
} from '@sett/schemas';
import { randomUUID } from 'node:crypto';
import { currentRequestId } from '@sett/logger';
import { fallbackRemoteConfig } from '../remote-config/remote-config-builder';
import type { RemoteConfigStore } from '../remote-config/remote-config-store';
import { decodeDecideBody } from './body-decoding';
import type { DecideMetrics } from './decide-metrics';
import { FLAGS_UNAVAILABLE_DETAIL, type DecideInput, type DecideService } from './decide-service';
import {
  createPostgresDeadline,
  DEFAULT_POSTGRES_BUDGET_MS,
  type PostgresDeadline,
} from './postgres-deadline';
import type { ProjectResolver } from './project-resolver';
import { formatResponseJson, responseShape, type Endpoint, type ResponseMeta } from './response-format';

export interface DecideRoutesDeps {
  service: DecideService;
  projects: ProjectResolver;
  metrics: DecideMetrics;
  geoipEnabled: boolean;
  /** How the client address (GeoIP) is read; default: the socket's peer (no trusted proxies). */
  clientIp?: ClientIpOptions;
  maxBodyBytes: number;
  /** The process' budget of decompressed bytes in flight (lz64, base64 and gzip-js bodies). */
  decompressionBudget?: DecompressionBudget;
  /** How long one request waits for Postgres in total (postgres-deadline.ts). */
  postgresBudgetMs?: number;
  /** The remote config documents merged into `config=true` answers. */
  remoteConfig: RemoteConfigStore;
}

export interface DecideRequest {
  /** The `v` and `compression` query parameters (strings when given once, else ignored). */
  version: unknown;
  compression: unknown;
  /** The `config` query parameter: `true` merges the remote config into the answer. */
  config: unknown;
  /** Raw body, as it came off the wire (its Content-Encoding is in the headers). */
  body: Buffer;
  headers: IncomingHttpHeaders;
  remoteAddress: string | undefined;
}

export type DecideAnswerer = (endpoint: Endpoint, req: DecideRequest) => Promise<string>;

const INVALID_KEY_DETAIL =
  'Project API key invalid. You can find your project API key in your project settings.';

/**
 * One request to its serialised JSON answer; throws SettErrors for 4xx answers. Top to bottom:
 * read the request (body, key -> project, validation), evaluate (decide-service.ts: gather
 * inputs, then pure evaluation), respond (response-format.ts, with the remote config for
 * `config=true`).
 */
export function createDecideAnswerer(deps: DecideRoutesDeps): DecideAnswerer {
  const budgetMs = deps.postgresBudgetMs ?? DEFAULT_POSTGRES_BUDGET_MS;
  return async (endpoint, req) => {
    const started = process.hrtime.bigint();
    const shape = responseShape(endpoint, req.version);
    const deadline = createPostgresDeadline(budgetMs);
    let outcome = 'ok';
    try {
      const { token, input } = await readDecideRequest(deps, req, deadline);
      const result = await deps.service.evaluate(input);
      if (result.errorsWhileComputingFlags) outcome = 'partial';
      if (result.quotaLimited) outcome = 'quota_limited';
      const meta: ResponseMeta = { requestId: bodyRequestId(), evaluatedAt: Date.now() };
      if (req.config === 'true' || req.config === '1') {
        meta.remoteConfig =
          (await deps.remoteConfig.get(input.project.teamId, token).then(
            (entry) => entry?.config,
            () => undefined,
          )) ?? fallbackRemoteConfig(token, Object.keys(result.flags).length > 0);
      }
      return formatResponseJson(shape, result, meta);
    } catch (err) {
      outcome = 'rejected';
      throw err;
    } finally {
      deadline.clear();
      deps.metrics.requests.inc({ endpoint, shape, outcome });
      deps.metrics.latency.observe({ endpoint }, Number(process.hrtime.bigint() - started) / 1e9);
    }
  };
}

/**
 * The request as evaluation input, in PostHog's order of refusals: a missing or malformed key
 * (401) before any lookup, an unknown key (401) before the body's 400s. The one round trip here
 * is the key -> project lookup (warm: in process; cold: Redis GET, else Postgres and a Redis SET).
 */
async function readDecideRequest(
  deps: DecideRoutesDeps,
  req: DecideRequest,
  deadline: PostgresDeadline,
): Promise<{ token: string; input: DecideInput }> {
  const body = await decodeDecideBody({
    body: req.body,
    contentType: req.headers['content-type'],
    contentEncoding: req.headers['content-encoding'],
    compression: typeof req.compression === 'string' ? req.compression : undefined,
    maxBytes: deps.maxBodyBytes,
    budget: deps.decompressionBudget,
  });

  const token = nonEmptyString(body.api_key) ?? nonEmptyString(body.token) ?? nonEmptyString(body.$token);
  if (!token) throw new AuthenticationError(`API key not provided. ${INVALID_KEY_DETAIL}`, 'invalid_api_key');
  // Shape first: a key that cannot be one (too long, spaces, NUL or other control
  // characters) is refused before any Redis or Postgres lookup.
  if (!isWellFormedProjectToken(token)) throw new AuthenticationError(INVALID_KEY_DETAIL, 'invalid_api_key');
  // Warm (the steady state): the in-process answer, without a wait or the deadline's timer.
  let project = deps.projects.cached?.(token);
  if (project === undefined) {
    try {
      project = await deadline.race(deps.projects.resolve(token));
    } catch {
      // Neither Redis nor Postgres could say whether the key exists (PostHog: 503).
      throw new ServiceUnavailableError(FLAGS_UNAVAILABLE_DETAIL);
    }
  }
  if (!project) throw new AuthenticationError(INVALID_KEY_DETAIL, 'invalid_api_key');

  const distinctId = body.distinct_id;
  // Objects and arrays are left to the schema below: String() of a deeply nested array
  // recurses (Array#join) and would overflow the stack.
  const blank = typeof distinctId !== 'object' && String(distinctId).trim() === '';
  if (distinctId === undefined || distinctId === null || blank) {
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
  // Evaluation turns property values into text (JSON for objects): bound the nesting first.
  for (const attr of ['person_properties', 'group_properties'] as const) {
    if (exceedsDepth(body[attr], MAX_JSON_DEPTH))
      throw new ValidationError(`${attr} is nested deeper than ${MAX_JSON_DEPTH} levels.`, attr);
  }

  const flagKeys = requestedFlagKeys(body as Record<string, unknown>);
  const groups = Object.create(null) as Record<string, string>; // client-chosen group type names
  for (const [type, key] of Object.entries(body.groups ?? {})) groups[type] = String(key);
  const anon = body.$anon_distinct_id;
  const input: DecideInput = {
    project,
    distinctId: String(distinctId),
    anonDistinctId: anon === undefined || anon === null || anon === '' ? undefined : String(anon),
    personProperties: (body.person_properties ?? {}) as Record<string, unknown>,
    groups,
    groupProperties: (body.group_properties ?? {}) as Record<string, Record<string, unknown>>,
    ip:
      deps.geoipEnabled && body.geoip_disable !== true
        ? clientIp(req.headers, req.remoteAddress, deps.clientIp)
        : undefined,
    disableFlags: body.disable_flags === true,
    flagKeys,
    deadline,
  };
  return { token, input };
}

/**
 * `flag_keys_to_evaluate` (server SDKs, Android) or `flag_keys` (posthog-js): only these flags
 * are evaluated and answered. Absent or empty: every flag. Not a list of strings: 400.
 */
function requestedFlagKeys(body: Record<string, unknown>): ReadonlySet<string> | undefined {
  for (const attr of ['flag_keys_to_evaluate', 'flag_keys'] as const) {
    const raw = body[attr];
    if (raw === undefined || raw === null) continue;
    if (!Array.isArray(raw) || raw.some((k) => typeof k !== 'string'))
      throw new ValidationError(`${attr} must be a list of flag keys.`, attr);
    return raw.length > 0 ? new Set(raw as string[]) : undefined;
  }
  return undefined;
}

/** The answer's `requestId` (a UUID, as PostHog's): the request's X-Request-Id when it is one,
 * so an SDK's `$feature_flag_called` event can be matched with decide's log lines. */
function bodyRequestId(): string {
  const id = currentRequestId();
  return id !== undefined && isUuid(id) ? id : randomUUID();
}

function nonEmptyString(value: unknown): string | undefined {
  return typeof value === 'string' && value.trim() !== '' ? value.trim() : undefined;
}
