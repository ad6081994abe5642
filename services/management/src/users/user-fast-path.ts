// The two hot reads of the management API served on node:http in front of Express (the
// @sett/http fast-path factory): GET /api/users/ and GET /api/users/<uuid|@me>/. Express's
// router and per-request middleware cost more than the read itself (a bare Express route does
// about as many requests per second as the plain pg baseline of `pnpm bench management`), so
// these two skip them and do exactly what the Express route does, in the same order: the key
// (cached lookup), the rate limit, the scope, one SQL statement (user-read-store.ts), the JSON.
// Only requests spelled plainly are claimed: a path of a uuid or @me, a query of at most
// `limit`, `offset` and `is_staff` once each with plain values. Anything else (odd encodings, the
// input rules' cases, other methods) goes to Express and gets its answer from there.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { RateLimitedError } from '@sett/http';
import { requireScope } from '../auth/auth-context';
import type { KeyAuthenticator } from '../auth/auth-middleware';
import { toDatabaseSettError } from '../database-errors';
import { envelope, linkOrigin, parsePage } from '../pagination/pagination';
import type { RateLimiter } from '../rate-limit/rate-limiter';
import { parseBooleanQuery } from './user-routes';
import type { UserService } from './user-service';
import type { UserJson } from './user-views';
import { viewerOf } from './viewer';

export type UserFastRoute =
  | { kind: 'list'; query: Record<string, string> }
  | { kind: 'retrieve'; id: string };

const RETRIEVE_RE = /^\/api\/users\/([0-9a-fA-F-]{36}|@me)\/$/;
const QUERY_RE = /^[A-Za-z0-9_.=&-]*$/;
const LIST_PARAMS = new Set(['limit', 'offset', 'is_staff']);

/** The query string as a plain object, or undefined when it is not one of the plain forms. */
function plainQuery(url: string): Record<string, string> | undefined {
  const q = url.indexOf('?');
  if (q === -1) return {};
  const raw = url.slice(q + 1);
  if (!QUERY_RE.test(raw)) return undefined;
  const out: Record<string, string> = {};
  for (const part of raw.split('&')) {
    if (part === '') continue;
    const eq = part.indexOf('=');
    const key = eq === -1 ? part : part.slice(0, eq);
    if (!LIST_PARAMS.has(key) || key in out) return undefined;
    out[key] = eq === -1 ? '' : part.slice(eq + 1);
  }
  return out;
}

export function matchUserRead(req: IncomingMessage, path: string): UserFastRoute | undefined {
  if (req.method !== 'GET') return undefined;
  const url = req.url ?? '/';
  if (path === '/api/users/') {
    const query = plainQuery(url);
    return query ? { kind: 'list', query } : undefined;
  }
  const m = RETRIEVE_RE.exec(path);
  // A retrieve takes no query parameters: anything there goes the long way.
  return m && !url.includes('?') ? { kind: 'retrieve', id: m[1]! } : undefined;
}

// A NUL cannot occur in stored text (Postgres refuses it, the input rules too), so a string
// starting with one is a safe placeholder in the JSON text.
const PLACEHOLDER_RE = /"\\u0000(\d+)"/g;

/**
 * The list envelope as JSON, with each distinct nested organization and team serialised once:
 * every user of a page usually shares one current organization (with all its projects), which
 * is most of the bytes; JSON.stringify would write it out anew for each of them.
 */
export function stringifyPage(envelope: object, results: readonly UserJson[]): string {
  const shared: string[] = [];
  const index = new Map<object, number>();
  const slot = (value: object | null): unknown => {
    if (value === null) return null;
    let i = index.get(value);
    if (i === undefined) {
      i = shared.push(JSON.stringify(value)) - 1;
      index.set(value, i);
    }
    return `\u0000${i}`;
  };
  const users = results.map((u) => ({ ...u, team: slot(u.team), organization: slot(u.organization) }));
  const text = JSON.stringify({ ...envelope, results: users });
  return text.replace(PLACEHOLDER_RE, (_m, i: string) => shared[Number(i)]!);
}

export function createUserReadHandler(deps: {
  authenticator: KeyAuthenticator;
  limiter: RateLimiter;
  users: UserService;
  publicUrl?: string;
}) {
  return async (req: IncomingMessage, res: ServerResponse, route: UserFastRoute): Promise<void> => {
    try {
      const auth = await deps.authenticator.authenticate(req);
      const decision = await deps.limiter.take({ key: auth.keyId, user: auth.userId });
      if (!decision.ok) throw new RateLimitedError(decision.retryAfterSeconds);
      requireScope(auth, 'user:read');
      let body: unknown;
      let json: string | undefined;
      if (route.kind === 'retrieve') body = await deps.users.retrieve(viewerOf(auth), route.id);
      else {
        const page = parsePage(route.query);
        const isStaff = parseBooleanQuery(route.query.is_staff, 'is_staff');
        const { count, results } = await deps.users.list(viewerOf(auth), page, isStaff);
        const info = {
          origin: linkOrigin(deps.publicUrl),
          path: '/api/users/',
          query: route.query,
        };
        body = envelope(info, page, count, results);
        json = stringifyPage(body as object, results);
      }
      json ??= JSON.stringify(body);
      res.statusCode = 200;
      res.setHeader('Content-Type', 'application/json; charset=utf-8');
      res.setHeader('Content-Length', Buffer.byteLength(json));
      res.end(json);
    } catch (err) {
      // As the Express routes: database errors mapped (503, 409, 400), then the one error writer.
      throw toDatabaseSettError(err) ?? err;
    }
  };
}
