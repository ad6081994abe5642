// Every route decide serves, one declaration each: flag evaluation for SDKs (/decide, /flags),
// flag definitions for servers evaluating locally, the remote config document and script, the
// public lists posthog-js reads with the project token, and the posthog-js files. Dispatch,
// 405s, CORS, metrics labels, OpenAPI and the proxies' route lists are derived from this table
// (@sett/http's route mechanism; docs/architecture.md, "HTTP routes").
//
// Query strings of SDK routes stay open: SDKs add cache busters and version markers of their own
// (`_`, `ver`, `ip`…), which decide ignores as PostHog does rather than refuse an SDK's requests.
import { route, SerializedJson, type RouteTable } from '@sett/http';
import type { DecideAnswerer, DecideRequest } from './decide/decide-answer';
import type { Endpoint } from './decide/response-format';
import type { LocalEvaluationHandler } from './local-evaluation/local-evaluation-handler';
import type { PublicListQuery, PublicLists } from './public-lists/public-list-routes';
import type { RemoteConfigHandler } from './remote-config/remote-config-handler';
import type { StaticFiles } from './static/static-routes';
import { readBody } from '@sett/http';

export interface DecideRouteDeps {
  answer: DecideAnswerer;
  /** Limit of a decide/flags body on the wire (DECIDE_MAX_BODY_BYTES). */
  maxBodyBytes: number;
  localEvaluation: LocalEvaluationHandler;
  remoteConfig: RemoteConfigHandler;
  publicLists: PublicLists;
  staticFiles: StaticFiles;
}

const r = route<DecideRouteDeps>();

const evaluationQuery = {
  type: 'object',
  properties: {
    // Untyped: given more than once, a parameter is ignored (not refused), as PostHog does.
    v: { description: 'answer shape: /decide 1-4 (4 current), /flags 1-2' },
    config: { description: '`true`: the remote config is merged into the answer' },
    compression: { description: 'gzip-js, lz64 or base64: how the body is encoded' },
    ip: { type: 'string', description: 'sent by posthog-js (ignored)' },
    _: { type: 'string', description: 'client time in ms (ignored)' },
    ver: { type: 'string', description: 'the SDK version (ignored)' },
  },
  additionalProperties: true,
} as const;

const evaluationBody = {
  description:
    '{api_key (or token), distinct_id, $anon_distinct_id?, person_properties?, groups?, group_properties?, ' +
    'flag_keys_to_evaluate?, geoip_disable?, disable_flags?}: JSON, form-encoded `data=`, gzip ' +
    '(Content-Encoding or ?compression=gzip-js), lz64 or base64.',
  type: 'object',
} as const;

const anyObject = { type: 'object' } as const;

function evaluation(endpoint: Endpoint, summary: string) {
  return r({
    method: 'POST',
    url: `/${endpoint}/`,
    summary,
    tag: 'flags',
    auth: { kind: 'project_token', in: 'body' },
    // Read here and decoded by the answerer (gzip, lz64, base64, form; limits on each).
    body: 'raw',
    // The hottest route: served in front of the router when spelled as declared (`pnpm bench
    // decide` measured the router at about a third of its throughput; docs/architecture.md).
    rawFastPath: true,
    schema: { querystring: evaluationQuery, rawBody: evaluationBody, response: { 200: anyObject } },
    compat: { posthog: 'same' },
    handler: async ({ request }, deps) => {
      const query = rawQuery(request.url);
      const req: DecideRequest = {
        version: single(query, 'v'),
        compression: single(query, 'compression'),
        config: single(query, 'config'),
        body: await readBody(request.raw, deps.maxBodyBytes),
        headers: request.headers,
        remoteAddress: request.raw.socket.remoteAddress,
      };
      return new SerializedJson(await deps.answer(endpoint, req));
    },
  });
}

function rawQuery(url: string): URLSearchParams | undefined {
  const q = url.indexOf('?');
  return q === -1 ? undefined : new URLSearchParams(url.slice(q + 1));
}

/** A query parameter given once; repeated (`?v=4&v=4`) or absent, it says nothing (the oldest
 * answer shape, as PostHog reads a list where it expects one value). */
function single(query: URLSearchParams | undefined, name: string): string | undefined {
  const all = query?.getAll(name) ?? [];
  return all.length === 1 ? all[0] : undefined;
}

const localEvaluationQuery = {
  type: 'object',
  properties: {
    // Untyped, as below: a repeated parameter is the handler's to judge, not a schema error.
    token: { description: 'the project API key (required with a personal API key)' },
    send_cohorts: { type: 'string', description: 'present: cohorts are sent with the flags' },
  },
  additionalProperties: true,
} as const;

function localEvaluation(url: string) {
  return r({
    method: 'GET',
    url,
    summary: 'Flag definitions for local evaluation (ETag; 304 when unchanged)',
    tag: 'flags',
    // Credential and project are looked up together by the handler (one round trip each).
    auth: { kind: 'personal_or_secret_key', scope: 'feature_flag:read', checkedBy: 'handler' },
    // For servers holding a secret key: no page should read it, so no CORS at all.
    cors: 'none',
    schema: { querystring: localEvaluationQuery, response: { 200: anyObject } },
    compat: { posthog: 'same' },
    handler: ({ request, reply }, deps) => deps.localEvaluation(request.raw, reply.raw),
  });
}

const tokenParams = {
  type: 'object',
  required: ['token'],
  properties: { token: { type: 'string' } },
} as const;

function remoteConfig(suffix: 'config' | 'config.js', summary: string) {
  return r({
    method: 'GET',
    url: `/array/:token/${suffix}`,
    summary,
    tag: 'remote config',
    auth: { kind: 'project_token', in: 'path' },
    schema: { params: tokenParams, querystring: { type: 'object', additionalProperties: true } },
    compat: { posthog: 'same' },
    handler: ({ params, reply }, deps) =>
      deps.remoteConfig(params.token, suffix === 'config' ? 'json' : 'js', reply.raw),
  });
}

const listQuery = {
  type: 'object',
  properties: {
    token: { description: 'the project API key (the first one when repeated)' },
    api_key: { description: 'the project API key (older SDKs)' },
  },
  additionalProperties: true,
} as const;

const earlyAccessQuery = {
  type: 'object',
  properties: {
    ...listQuery.properties,
    stage: { description: 'stages to list, repeatable (default: beta)' },
  },
  additionalProperties: true,
} as const;

function emptyList(url: string, key: string, summary: string) {
  return r({
    method: 'GET',
    url,
    summary,
    tag: 'public lists',
    auth: { kind: 'project_token', in: 'query' },
    schema: {
      querystring: listQuery,
      response: { 200: { type: 'object', required: [key], properties: { [key]: { type: 'array' } } } },
    },
    compat: { posthog: 'differs', note: 'always empty: Sett has none' },
    handler: ({ request }, deps) => deps.publicLists.empty(request.query as PublicListQuery, key),
  });
}

const nameParams = { type: 'object', required: ['name'], properties: { name: { type: 'string' } } } as const;

export const decideRoutes: RouteTable<DecideRouteDeps> = {
  service: 'decide',
  routes: [
    evaluation('decide', 'Flags and settings for an SDK (v=4: flags with details)'),
    evaluation('flags', 'Flag evaluation (v=2: flags with details)'),
    localEvaluation('/flags/definitions'),
    localEvaluation('/api/feature_flag/local_evaluation'),
    remoteConfig('config', 'The remote config document (JSON) of a project token'),
    remoteConfig('config.js', 'The remote config as a script, for the snippet'),
    r({
      method: 'GET',
      url: '/api/early_access_features/',
      summary: 'Early access features by project token (default stage: beta)',
      tag: 'public lists',
      auth: { kind: 'project_token', in: 'query' },
      schema: {
        querystring: earlyAccessQuery,
        response: { 200: { type: 'object', required: ['earlyAccessFeatures'] } },
      },
      compat: { posthog: 'same' },
      handler: ({ request }, deps) => deps.publicLists.earlyAccessFeatures(request.query as PublicListQuery),
    }),
    emptyList('/api/surveys/', 'surveys', 'Surveys by project token'),
    emptyList('/api/web_experiments/', 'experiments', 'Web experiments by project token'),
    emptyList('/api/product_tours/', 'product_tours', 'Product tours by project token'),
    r({
      method: 'GET',
      url: '/static/:name',
      summary: 'posthog-js files (array.js and its extensions); `?v=<pinned version>` is immutable',
      tag: 'static',
      auth: { kind: 'none' },
      schema: { params: nameParams, querystring: { type: 'object', additionalProperties: true } },
      compat: { posthog: 'same' },
      handler: ({ params, request, reply }, deps) =>
        deps.staticFiles.unversioned(
          params.name,
          (request.query as { v?: unknown }).v,
          request.raw,
          reply.raw,
        ),
    }),
    r({
      method: 'GET',
      url: '/static/:version/:name',
      summary: 'posthog-js files of the pinned version or its major',
      tag: 'static',
      auth: { kind: 'none' },
      schema: {
        params: {
          type: 'object',
          required: ['version', 'name'],
          properties: { version: { type: 'string' }, name: { type: 'string' } },
        },
        querystring: { type: 'object', additionalProperties: true },
      },
      compat: { posthog: 'same' },
      handler: ({ params, request, reply }, deps) =>
        deps.staticFiles.versioned(params.version, params.name, request.raw, reply.raw),
    }),
  ],
};
