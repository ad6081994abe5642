// What a route declaration is. Every HTTP endpoint of every service is one `RouteDef` in its
// service's table (`services/<name>/src/routes.ts`): method, path, JSON schemas for what comes
// in and what goes out, who may call it, and the handler. Everything else is derived from the
// tables (route-app.ts: dispatch, 405, auth and scope, validation, CORS, metrics labels, access
// logs; openapi.ts: the OpenAPI document; proxy-table.ts: every proxy's route list).
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { FromSchema, JSONSchema } from 'json-schema-to-ts';

export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

/**
 * Who may call a route.
 * - `none`: anyone (operational routes, static files, remote config by the token in its path).
 * - `project_token`: the public project API key (`phc_…`) in the body or query; the handler
 *   resolves it (capture and decide must parse the body first), the declaration documents it.
 * - `personal_key`: `Authorization: Bearer phx_…` holding `scope` (null: any valid key).
 *   Checked by the mechanism before the body is read.
 * - `personal_or_secret_key`: a personal key holding `scope`, or the project's secret key
 *   (`phs_…`); checked by the mechanism through the service's authenticator of that kind.
 */
export type RouteAuth =
  | { kind: 'none' }
  | { kind: 'project_token'; in: 'body' | 'query' | 'path' }
  | { kind: 'personal_key'; scope: string | null }
  | {
      kind: 'personal_or_secret_key';
      scope: string;
      /** `handler`: the handler checks the credential itself, together with the project it
       * names (decide's local evaluation: one lookup of both); the declaration documents it. */
      checkedBy?: 'handler';
    };

export type AuthKind = RouteAuth['kind'];

/** How the request body reaches the handler. */
export type BodyMode =
  /** Parsed as JSON (the `body` schema validates it); the default for POST, PUT and PATCH. */
  | 'json'
  /** Left unread: the handler reads `request.raw` itself (capture's gzip/lz64/form bodies). */
  | 'raw'
  /** JSON as `json` (validated by the `body` schema), or a `multipart/form-data` upload left
   * unread for the handler (`request.raw`, `isUpload(request)`), which checks what it makes of
   * the form itself; `rawBody` documents the form. */
  | 'upload';

export interface RouteSchemas {
  params?: JSONSchema;
  querystring?: JSONSchema;
  body?: JSONSchema;
  /** A `raw` route's body, or an `upload` route's form, which its handler reads and checks
   * itself: documented (OpenAPI), not validated by the mechanism. */
  rawBody?: JSONSchema;
  /** Keyed by status code; the success status must be present. */
  response?: Record<number, JSONSchema>;
}

/** Where a route stands against PostHog's endpoint of the same path (docs/compatibility.md). */
export interface Compatibility {
  /** `same`: PostHog's shapes and codes; `differs`: served with the differences in `note`. */
  posthog: 'same' | 'differs' | 'sett-only';
  note?: string;
}

// The wide JSONSchema type itself (a declaration that gave no schema) infers nothing: asking
// FromSchema for it never ends.
type Infer<S> = [S] extends [undefined]
  ? undefined
  : JSONSchema extends S
    ? unknown
    : S extends JSONSchema
      ? FromSchema<S>
      : undefined;

export interface RouteContext<S extends RouteSchemas, A> {
  params: Infer<S['params']>;
  query: Infer<S['querystring']>;
  body: Infer<S['body']>;
  /** What the route's authenticator returned (undefined for `none` and `project_token`). */
  auth: A;
  request: FastifyRequest;
  reply: FastifyReply;
}

/** Everything a declaration says apart from its handler (what the generators read). */
export interface RouteDeclaration {
  method: HttpMethod;
  /** find-my-way syntax (`/api/projects/:project_id/`); a trailing slash is optional on requests. */
  url: string;
  /** More paths served by the same declaration (e.g. `/api/environments/:project_id/query/`). */
  aliases?: string[];
  /** One line for OpenAPI and the docs. */
  summary: string;
  /** More for OpenAPI (limits, rules, differences from PostHog), when one line is not enough. */
  description?: string;
  /** OpenAPI tag: the feature the route belongs to. */
  tag: string;
  auth: RouteAuth;
  schema: RouteSchemas;
  /** The status of a successful answer (default 200); 204 sends no body. */
  status?: number;
  body?: BodyMode;
  /**
   * A top-level field of a JSON body that the body schema (closed with `additionalProperties:
   * false`) does not list: `ignore` (the default, as PostHog's serializers do) drops it and
   * names it in the access line; `refuse` answers 400 naming it (PostHog's query endpoint,
   * whose models forbid extra fields). A field Sett knows but does not serve is listed with
   * `notServed()` and refused either way. Nested objects are as strict as their schemas.
   */
  unknownBodyFields?: 'ignore' | 'refuse';
  /** Larger than the service's JSON body limit (bytes), for this route only. */
  bodyLimit?: number;
  /** Marked in the table when a route is served by plain node:http in front of the router:
   * only where the benchmarks show the router costing over 5%. */
  rawFastPath?: boolean;
  compat?: Compatibility;
  /** Not listed in OpenAPI. */
  hidden?: boolean;
  /**
   * `public`: any origin may read the answer, without credentials. `none`: no CORS headers on
   * any answer, and a preflight gets only `Allow` (reads for servers holding a secret key, which
   * no browser page should make). Unset: the service's default (`public` for capture and decide,
   * `none` for management).
   */
  cors?: 'public' | 'none';
}

export interface RouteDef<Deps, S extends RouteSchemas = RouteSchemas, A = unknown> extends RouteDeclaration {
  schema: S;
  /**
   * Returns the answer body (sent as JSON with `status`), a SerializedJson (JSON the handler
   * already holds as text, sent as is), or nothing after writing the answer itself through
   * `reply` (files, scripts, 304s). Throws SettErrors for 4xx.
   */
  handler(ctx: RouteContext<S, A>, deps: Deps): unknown;
}

/**
 * An answer a handler already holds as JSON text (a document serialised once and cached, or
 * written from cached fragments): sent as is, with the route's status and, unless the handler set
 * one, `application/json; charset=utf-8`. Checked against the response schema like any other
 * answer when the app checks responses.
 */
export class SerializedJson {
  constructor(readonly json: string | Buffer) {}
}

/** Any route of a table, its schema types erased. */
export interface AnyRoute<Deps> extends RouteDeclaration {
  handler(ctx: UntypedContext, deps: Deps): unknown;
}

interface UntypedContext {
  params: unknown;
  query: unknown;
  body: unknown;
  auth: unknown;
  request: FastifyRequest;
  reply: FastifyReply;
}

/**
 * The typed way to write a table entry: `route<Deps, Auth>()({...})` infers the handler's
 * params, query and body types from the schemas (`as const`).
 */
export function route<Deps, A = unknown>() {
  return <const S extends RouteSchemas>(def: RouteDef<Deps, S, A>): AnyRoute<Deps> =>
    def as unknown as AnyRoute<Deps>;
}

/** A service's whole table, as the generators see it (no handlers needed to read it). */
export interface RouteTable<Deps = unknown> {
  service: 'capture' | 'decide' | 'management' | 'ingestion';
  routes: readonly AnyRoute<Deps>[];
}
