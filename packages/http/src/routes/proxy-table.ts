// The edge's routing, derived from the services' route tables: which service owns which path.
// Every proxy (nginx, Caddy, the Kubernetes Ingress, the dev edge) is generated from what
// `deriveEdgeRouting` returns (`pnpm routes`), so a route added to a table is routed by adding it.
//
// The rules, which every proxy can express:
// - a path without parameters is an exact path, matched with or without its trailing slash;
// - a path with parameters claims the subtree before its first parameter (`/array/:token/config`
//   claims `/array/`): proxies route prefixes, not patterns;
// - everything else under the fallback prefix (`/api/`) goes to the fallback service
//   (management), whose own routes there need no entry; exact paths and subtrees of other
//   services under it (decide's public lists) win over it;
// - anything else is not routed (the edge's 404).
// Two services claiming the same path, or one claiming a subtree that holds another's path, is
// refused with the declarations at fault named, since a proxy would send one of them astray.
import type { RouteTable } from './route-types';

export type EdgeService = 'capture' | 'decide' | 'management';

export interface EdgeRoute {
  /** `exact`: the path, with or without a trailing slash; `prefix`: every path starting with it. */
  match: 'exact' | 'prefix';
  /** Exact paths have no trailing slash (but `/`); prefixes end with one. */
  path: string;
  service: EdgeService;
  /** The declared paths this entry serves. */
  from: string[];
}

export interface EdgeRouting {
  /** Exact paths sorted by path, then prefixes, longest first. */
  routes: EdgeRoute[];
  /** Every other path under `prefix` (and `prefix` without its slash) goes to `service`. */
  fallback: { prefix: string; service: EdgeService };
}

export interface EdgeRoutingOptions {
  fallback: { prefix: string; service: EdgeService };
}

export const DEFAULT_EDGE_FALLBACK = { prefix: '/api/', service: 'management' } as const;

export class RouteConflictError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'RouteConflictError';
  }
}

const EDGE_SERVICES = new Set<string>(['capture', 'decide', 'management']);

/** What one declared path claims at the edge. `pattern`: a fallback-service route the fallback
 * covers; it needs no entry but must not collide with another service's claims. */
interface Claim {
  kind: 'exact' | 'prefix' | 'pattern';
  path: string;
  service: EdgeService;
  declared: string;
}

function isParam(segment: string): boolean {
  return segment.startsWith(':') || segment.includes('*');
}

function segmentsOf(path: string): string[] {
  return path.split('/').filter((s) => s !== '');
}

function trimSlash(path: string): string {
  return path.length > 1 && path.endsWith('/') ? path.slice(0, -1) : path;
}

function claimOf(url: string, service: EdgeService, fallback: EdgeRoutingOptions['fallback']): Claim {
  if (!url.startsWith('/')) throw new RouteConflictError(`${service}: path '${url}' does not start with /`);
  const segments = segmentsOf(url);
  const firstParam = segments.findIndex(isParam);
  const fallbackCovers =
    service === fallback.service &&
    (url.startsWith(fallback.prefix) || trimSlash(url) === trimSlash(fallback.prefix));
  if (fallbackCovers) return { kind: 'pattern', path: url, service, declared: url };
  if (firstParam < 0) return { kind: 'exact', path: trimSlash(url), service, declared: url };
  if (firstParam === 0)
    throw new RouteConflictError(
      `${service}: '${url}' starts with a parameter; the edge could only route it by taking every path`,
    );
  return { kind: 'prefix', path: `/${segments.slice(0, firstParam).join('/')}/`, service, declared: url };
}

/** Could a path that `pattern` (find-my-way syntax) matches start with `prefix`? */
function patternReachesPrefix(pattern: string, prefix: string): boolean {
  const m = segmentsOf(pattern);
  const p = segmentsOf(prefix);
  for (let i = 0; i < p.length; i++) {
    const seg = m[i];
    if (seg === undefined) return false;
    if (seg.includes('*')) return true;
    if (!isParam(seg) && seg !== p[i]) return false;
  }
  return true;
}

/** Does `pattern` match the exact path (trailing slash optional)? */
function patternMatches(pattern: string, path: string): boolean {
  const m = segmentsOf(pattern);
  const p = segmentsOf(path);
  for (let i = 0; i < m.length; i++) {
    const seg = m[i]!;
    if (seg.includes('*')) return true;
    if (p[i] === undefined) return false;
    if (!isParam(seg) && seg !== p[i]) return false;
  }
  return m.length === p.length;
}

/** Why two claims of different services cannot both be routed, or undefined when they can. */
function collision(a: Claim, b: Claim): string | undefined {
  if (a.kind === 'pattern' && b.kind === 'pattern') return undefined;
  if (b.kind === 'pattern') [a, b] = [b, a];
  if (a.kind === 'pattern') {
    if (b.kind === 'exact' && patternMatches(a.path, b.path)) return 'the same path';
    if (b.kind === 'prefix' && patternReachesPrefix(a.path, b.path)) return `a path under ${b.path}`;
    return undefined;
  }
  if (a.kind === 'exact' && b.kind === 'exact') return a.path === b.path ? 'the same path' : undefined;
  if (a.kind === 'prefix' && b.kind === 'exact') [a, b] = [b, a];
  if (a.kind === 'exact' && b.kind === 'prefix') {
    if (a.path.startsWith(b.path) || `${a.path}/` === b.path) return `a path under ${b.path}`;
    return undefined;
  }
  if (a.path.startsWith(b.path) || b.path.startsWith(a.path)) return 'nested subtrees';
  return undefined;
}

/**
 * The edge's routing from the services' tables. Throws RouteConflictError naming the
 * declarations when two services' paths cannot be told apart by a path-routing proxy.
 */
export function deriveEdgeRouting(
  tables: readonly Pick<RouteTable<unknown>, 'service' | 'routes'>[],
  opts: EdgeRoutingOptions = { fallback: { ...DEFAULT_EDGE_FALLBACK } },
): EdgeRouting {
  const { fallback } = opts;
  if (!fallback.prefix.startsWith('/') || !fallback.prefix.endsWith('/') || fallback.prefix === '/')
    throw new RouteConflictError(`fallback prefix '${fallback.prefix}' must be a subtree like /api/`);
  const claims: Claim[] = [];
  const seen = new Set<string>();
  for (const table of tables) {
    if (!EDGE_SERVICES.has(table.service))
      throw new RouteConflictError(
        `${table.service} has no place at the edge: only capture, decide and management`,
      );
    const service = table.service as EdgeService;
    for (const r of table.routes) {
      for (const url of [r.url, ...(r.aliases ?? [])]) {
        const key = `${service} ${url}`;
        if (seen.has(key)) continue;
        seen.add(key);
        claims.push(claimOf(url, service, fallback));
      }
    }
  }

  const problems: string[] = [];
  for (const c of claims) {
    if (c.service !== fallback.service && c.kind === 'prefix' && fallback.prefix.startsWith(c.path))
      problems.push(
        `${c.service} '${c.declared}' would take all of ${fallback.prefix} from ${fallback.service}`,
      );
  }
  for (let i = 0; i < claims.length; i++) {
    for (let j = i + 1; j < claims.length; j++) {
      const a = claims[i]!;
      const b = claims[j]!;
      if (a.service === b.service) continue;
      const why = collision(a, b);
      if (why) problems.push(`${a.service} '${a.declared}' and ${b.service} '${b.declared}' claim ${why}`);
    }
  }
  if (problems.length > 0) throw new RouteConflictError(`edge routes conflict:\n  ${problems.join('\n  ')}`);

  const byKey = new Map<string, EdgeRoute>();
  for (const c of claims) {
    if (c.kind === 'pattern') continue;
    const key = `${c.kind} ${c.path}`;
    const entry = byKey.get(key) ?? { match: c.kind, path: c.path, service: c.service, from: [] };
    if (!entry.from.includes(c.declared)) entry.from.push(c.declared);
    byKey.set(key, entry);
  }
  const routes = [...byKey.values()];
  for (const r of routes) r.from.sort();
  routes.sort((a, b) => {
    if (a.match !== b.match) return a.match === 'exact' ? -1 : 1;
    if (a.match === 'prefix' && a.path.length !== b.path.length) return b.path.length - a.path.length;
    return a.path < b.path ? -1 : a.path > b.path ? 1 : 0;
  });
  return { routes, fallback: { ...fallback } };
}

/** A compiled matcher over a routing (the dev edge's per-request lookup). */
export function edgeMatcher(routing: EdgeRouting): (pathname: string) => EdgeService | null {
  const exact = new Map<string, EdgeService>();
  const prefixes: Array<[string, EdgeService]> = [];
  for (const r of routing.routes) {
    if (r.match === 'exact') exact.set(r.path, r.service);
    else prefixes.push([r.path, r.service]);
  }
  const { prefix: fallbackPrefix, service: fallbackService } = routing.fallback;
  const fallbackBare = fallbackPrefix.slice(0, -1);
  return (pathname) => {
    const hit = exact.get(trimSlash(pathname));
    if (hit) return hit;
    for (const [prefix, service] of prefixes) if (pathname.startsWith(prefix)) return service;
    if (pathname.startsWith(fallbackPrefix) || pathname === fallbackBare) return fallbackService;
    return null;
  };
}

/** Which service the edge sends `pathname` to (the path of the request target, no query). */
export function matchEdgeRoute(routing: EdgeRouting, pathname: string): EdgeService | null {
  return edgeMatcher(routing)(pathname);
}

export interface EdgeProbe {
  path: string;
  /** The service that must receive it, or null for the edge's 404. */
  service: EdgeService | null;
}

/**
 * Requests that tell whether a proxy routes as the routing says: every exact path with and
 * without its slash and with a query, a path under every subtree, the fallback, and near misses
 * that must not be routed. What the proxy conformance tests (nginx, Caddy, the dev edge) send.
 */
export function edgeProbes(routing: EdgeRouting): EdgeProbe[] {
  const probes: EdgeProbe[] = [];
  const match = edgeMatcher(routing);
  const miss = (path: string) => {
    if (match(path) === null && !probes.some((p) => p.path === path)) probes.push({ path, service: null });
  };
  for (const r of routing.routes) {
    if (r.match === 'exact') {
      probes.push({ path: r.path, service: r.service });
      if (r.path !== '/') probes.push({ path: `${r.path}/?probe=1&token=phc_x`, service: r.service });
      miss(`${r.path}x`);
      miss(`${r.path}/x`);
    } else {
      probes.push({ path: `${r.path}probe/x.js?v=1`, service: r.service });
      miss(r.path.slice(0, -1));
      miss(`${r.path.slice(0, -1)}x`);
    }
  }
  const fb = routing.fallback;
  probes.push({ path: `${fb.prefix}probe/1/?limit=10`, service: fb.service });
  probes.push({ path: fb.prefix.slice(0, -1), service: fb.service });
  miss(`${fb.prefix.slice(0, -1)}x`);
  miss('/');
  miss('/nope');
  return probes;
}
