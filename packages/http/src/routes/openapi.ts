// The OpenAPI 3.1 document, generated from the route tables: every declared route (aliases
// included, operational routes left out), with its parameters, body, answers, error answers and
// the credential it takes. Nothing here is written by hand per endpoint: a route added to a table
// is documented by adding it.
import type { AnyRoute, RouteAuth, RouteDeclaration, RouteTable } from './route-types';

type Json = Record<string, unknown>;

export interface OpenApiOptions {
  title: string;
  version: string;
  description?: string;
  /** The server URL clients should use (the edge), if known. */
  serverUrl?: string;
}

const ERROR_SCHEMA = {
  type: 'object',
  required: ['type', 'code', 'detail', 'attr'],
  properties: {
    type: {
      type: 'string',
      enum: [
        'validation_error',
        'authentication_error',
        'invalid_request',
        'throttled_error',
        'server_error',
        'unavailable_error',
      ],
    },
    code: { type: 'string' },
    detail: { type: 'string' },
    attr: { type: ['string', 'null'], description: 'the field or query parameter at fault' },
    error_id: { type: 'string', description: 'on 500s: the id logged with the error' },
  },
};

const ERROR_TEXT: Record<number, string> = {
  400: 'Invalid input: `attr` names the field or query parameter',
  401: 'Missing or invalid credential',
  403: 'The credential lacks the scope or the access',
  404: 'Not found',
  405: 'Method not allowed on this path (`Allow` lists the allowed ones)',
  413: 'Request body too large',
  415: 'Unsupported Content-Type',
  429: 'Rate limited (`Retry-After`)',
  503: 'A dependency is unavailable, retry later',
};

/** `/api/projects/:project_id/` -> `/api/projects/{project_id}/` */
export function openApiPath(url: string): string {
  return url.replace(/:([A-Za-z0-9_]+)/g, '{$1}');
}

function security(auth: RouteAuth): Json[] {
  switch (auth.kind) {
    case 'none':
      return [];
    case 'project_token':
      return [{ ProjectApiKey: [] }];
    case 'personal_key':
      return [{ PersonalApiKey: auth.scope ? [auth.scope] : [] }];
    case 'personal_or_secret_key':
      return [{ PersonalApiKey: [auth.scope] }, { ProjectSecretKey: [] }];
  }
}

function errorStatuses(r: RouteDeclaration): number[] {
  const statuses = new Set<number>([400, 405]);
  if (r.auth.kind !== 'none') statuses.add(401);
  if (r.auth.kind === 'personal_key' || r.auth.kind === 'personal_or_secret_key') {
    statuses.add(403);
    statuses.add(429);
  }
  if (r.url.includes(':')) statuses.add(404);
  if (r.body === 'raw' || r.body === 'upload' || r.schema.body) statuses.add(413);
  statuses.add(503);
  for (const code of Object.keys(r.schema.response ?? {})) statuses.delete(Number(code));
  return [...statuses].sort();
}

function parameters(r: RouteDeclaration): Json[] {
  const out: Json[] = [];
  const add = (where: 'path' | 'query', schema: unknown) => {
    const s = schema as { properties?: Record<string, Json>; required?: string[] } | undefined;
    for (const [name, prop] of Object.entries(s?.properties ?? {})) {
      const { description, ...rest } = prop as Json & { description?: string };
      out.push({
        name,
        in: where,
        required: where === 'path' || (s?.required ?? []).includes(name),
        ...(description ? { description } : {}),
        schema: rest,
      });
    }
  };
  add('path', r.schema.params);
  // Path parameters the declaration did not describe are still parameters.
  for (const m of r.url.matchAll(/:([A-Za-z0-9_]+)/g)) {
    if (!out.some((p) => p.name === m[1] && p.in === 'path'))
      out.push({ name: m[1], in: 'path', required: true, schema: { type: 'string' } });
  }
  add('query', r.schema.querystring);
  return out;
}

const ACTIONS: Record<string, string> = {
  GET: 'retrieve',
  POST: 'create',
  PUT: 'update',
  PATCH: 'partial_update',
  DELETE: 'destroy',
};

/** DRF-style operation ids (`feature_flags_list`, `feature_flags_partial_update`), unique. */
function operationId(r: RouteDeclaration, url: string, taken: Set<string>): string {
  const segments = url.split('/').filter((s) => s && !s.startsWith(':') && s !== 'api');
  const last = url.replace(/\/$/, '').split('/').pop() ?? '';
  const onItem = last.startsWith(':');
  let base: string;
  if (r.method === 'GET' && !onItem && segments.length > 0) base = `${segments.join('_')}_list`;
  else base = `${segments.join('_') || 'root'}_${ACTIONS[r.method]}`;
  base = base.replace(/[^A-Za-z0-9_]/g, '_');
  let id = base;
  for (let i = 2; taken.has(id); i++) id = `${base}_${i}`;
  taken.add(id);
  return id;
}

function operation(r: AnyRoute<unknown>, url: string, service: string, taken: Set<string>): Json {
  const status = r.status ?? 200;
  const responses: Json = {};
  for (const [code, schema] of Object.entries(r.schema.response ?? {})) {
    responses[code] = {
      description: Number(code) === status ? 'Success' : (ERROR_TEXT[Number(code)] ?? 'Answer'),
      ...(Number(code) === 204 ? {} : { content: { 'application/json': { schema } } }),
    };
  }
  if (!responses[String(status)]) responses[String(status)] = { description: 'Success' };
  for (const code of errorStatuses(r)) {
    responses[String(code)] = {
      description: ERROR_TEXT[code],
      content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } },
    };
  }
  const op: Json = {
    operationId: operationId(r, url, taken),
    summary: r.summary,
    ...(r.description ? { description: r.description } : {}),
    tags: [r.tag],
    security: security(r.auth),
    parameters: parameters(r),
    responses,
    'x-sett-service': service,
  };
  if (r.auth.kind === 'project_token') op['x-sett-project-token-in'] = r.auth.in;
  if (r.compat) op['x-posthog-compatibility'] = r.compat;
  const content: Json = {};
  if (r.body === 'upload') {
    if (r.schema.body) content['application/json'] = { schema: r.schema.body };
    content['multipart/form-data'] = { schema: r.schema.rawBody ?? { type: 'object' } };
  } else {
    const body = r.schema.body ?? r.schema.rawBody;
    if (body) content['application/json'] = { schema: body };
  }
  if (Object.keys(content).length > 0) op.requestBody = { required: r.method !== 'DELETE', content };
  return op;
}

export function buildOpenApi(tables: readonly RouteTable<unknown>[], opts: OpenApiOptions): Json {
  const paths: Record<string, Json> = {};
  const taken = new Set<string>();
  for (const table of tables) {
    for (const r of table.routes) {
      if (r.hidden) continue;
      for (const url of [r.url, ...(r.aliases ?? [])]) {
        const key = openApiPath(url);
        paths[key] ??= {};
        paths[key][r.method.toLowerCase()] = operation(r, url, table.service, taken);
      }
    }
  }
  const sortedPaths = Object.fromEntries(Object.entries(paths).sort(([a], [b]) => a.localeCompare(b)));
  return {
    openapi: '3.1.0',
    info: {
      title: opts.title,
      version: opts.version,
      ...(opts.description ? { description: opts.description } : {}),
    },
    ...(opts.serverUrl ? { servers: [{ url: opts.serverUrl }] } : {}),
    paths: sortedPaths,
    components: {
      schemas: { Error: ERROR_SCHEMA },
      securitySchemes: {
        PersonalApiKey: {
          type: 'http',
          scheme: 'bearer',
          description: 'A personal API key (phx_…); the scopes listed per operation are required.',
        },
        ProjectSecretKey: {
          type: 'http',
          scheme: 'bearer',
          description: "The project's secret key (phs_…), for local evaluation and remote config.",
        },
        ProjectApiKey: {
          type: 'apiKey',
          in: 'query',
          name: 'token',
          description:
            'The public project API key (phc_…): in the JSON body (`api_key` or `token`) for capture ' +
            'and decide, in the query (`token`) for the public lists, in the path for remote config.',
        },
      },
    },
  };
}
