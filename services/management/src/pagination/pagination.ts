// List pagination shared by every list endpoint: limit/offset parsing (default 100, max 1000),
// the PostHog envelope {count, next, previous, results} with page URLs (absolute on
// SETT_PUBLIC_URL, else relative: see linkOrigin), and the opaque
// cursor of the events list. Pure: the request is reduced to PageRequestInfo first.
import { ValidationError } from '@sett/http';
import { isUuid } from '@sett/schemas';

export const DEFAULT_LIMIT = 100;
export const MAX_LIMIT = 1000;

export interface Page {
  limit: number;
  offset: number;
}

export interface ListEnvelope<T> {
  count: number;
  next: string | null;
  previous: string | null;
  results: T[];
}

/** What URL building needs from a request: where the API is reachable and the request's path and query. */
export interface PageRequestInfo {
  /** e.g. "https://sett.example.com", no trailing slash; '' for links relative to the server */
  origin: string;
  /** path without the query string, e.g. "/api/users/" */
  path: string;
  query: Record<string, string>;
}

/**
 * limit (default 100) and offset of a query the route's schema checked (api-schemas.ts: limit
 * at least 1, offset at least 0); a larger limit is clamped to 1000, as DRF's max_limit does.
 */
export function parsePage(query: { limit?: number; offset?: number }): Page {
  return { limit: Math.min(query.limit ?? DEFAULT_LIMIT, MAX_LIMIT), offset: query.offset ?? 0 };
}

/**
 * Where page links point: SETT_PUBLIC_URL (no trailing slash), or '' when it is unset, which
 * makes links relative to the server ("/api/users/?offset=100"). Never the request's Host or
 * X-Forwarded-Host / -Proto: anyone can send those, and clients follow `next` as given, so a
 * link built from them sends the client (and its API key, with a script that re-sends it)
 * wherever the request said. PostHog's clients expect absolute links (DRF builds them), which is
 * why every shipped deployment sets SETT_PUBLIC_URL; relative links are the safe fallback.
 */
export function linkOrigin(publicUrl: string | undefined): string {
  return publicUrl ? publicUrl.replace(/\/+$/, '') : '';
}

/** What pageRequestInfo reads of a request (a Fastify request has it). */
export interface PageRequest {
  url: string;
  query: unknown;
}

export function pageRequestInfo(req: PageRequest, publicUrl: string | undefined): PageRequestInfo {
  const query: Record<string, string> = {};
  for (const [k, v] of Object.entries((req.query ?? {}) as Record<string, unknown>)) {
    if (typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean') query[k] = String(v);
    else if (Array.isArray(v) && typeof v[0] === 'string') query[k] = v[0];
  }
  const path = req.url.split('?')[0] ?? '/';
  return { origin: linkOrigin(publicUrl), path, query };
}

export function pageUrl(info: PageRequestInfo, params: Record<string, string | number | undefined>): string {
  const search = new URLSearchParams();
  const merged: Record<string, string | number | undefined> = { ...info.query, ...params };
  for (const [k, v] of Object.entries(merged)) if (v !== undefined) search.set(k, String(v));
  const qs = search.toString();
  return `${info.origin}${info.path}${qs ? `?${qs}` : ''}`;
}

export function envelope<T>(info: PageRequestInfo, page: Page, count: number, results: T[]): ListEnvelope<T> {
  const hasNext = page.offset + results.length < count && results.length > 0;
  const next = hasNext ? pageUrl(info, { limit: page.limit, offset: page.offset + page.limit }) : null;
  let previous: string | null = null;
  if (page.offset > 0) {
    const prevOffset = Math.max(0, Math.min(page.offset - page.limit, count - 1));
    // As DRF does: the first page's URL carries no offset at all.
    previous = pageUrl(info, { limit: page.limit, offset: prevOffset > 0 ? prevOffset : undefined });
  }
  return { count, next, previous, results };
}

/** Opaque cursor for newest-first keyset pagination on (timestamp, uuid). */
export interface EventCursor {
  /** timestamptz as Postgres prints it (microsecond precision kept). */
  ts: string;
  uuid: string;
}

export function encodeCursor(cursor: EventCursor): string {
  return Buffer.from(JSON.stringify([cursor.ts, cursor.uuid])).toString('base64url');
}

// timestamptz as Postgres prints it, e.g. "2026-01-01 00:00:07.123456+00".
const TIMESTAMP_RE = /^\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2}(\.\d{1,6})?([+-]\d{2}(:?\d{2}){0,2}|Z)$/;

/** The date and time fields name a real instant of years 1-9999 (no 30 February, no 25:00). */
function isCalendarTime(ts: string): boolean {
  const [y, mo, d, h, mi, sec] = ts
    .slice(0, 19)
    .split(/[- T:]/)
    .map(Number) as number[];
  const date = new Date(Date.UTC(2000, mo! - 1, d, h, mi, sec));
  date.setUTCFullYear(y!);
  return (
    y! >= 1 &&
    date.getUTCFullYear() === y &&
    date.getUTCMonth() === mo! - 1 &&
    date.getUTCDate() === d &&
    date.getUTCHours() === h &&
    date.getUTCMinutes() === mi &&
    date.getUTCSeconds() === sec
  );
}

export function decodeCursor(raw: unknown): EventCursor | undefined {
  if (raw === undefined || raw === '') return undefined;
  try {
    if (typeof raw !== 'string') throw new Error('not a string');
    const v = JSON.parse(Buffer.from(raw, 'base64url').toString('utf8')) as unknown;
    if (Array.isArray(v) && typeof v[0] === 'string' && typeof v[1] === 'string' && isUuid(v[1])) {
      if (TIMESTAMP_RE.test(v[0]) && isCalendarTime(v[0])) return { ts: v[0], uuid: v[1] };
    }
  } catch {
    // fall through to the validation error
  }
  throw new ValidationError('cursor is not a valid cursor.', 'cursor', 'invalid_input');
}
