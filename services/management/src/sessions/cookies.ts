// The session's cookies: `sett_session` carries the token (HttpOnly: no script reads it) and
// `sett_csrftoken` the CSRF token that a page echoes in `X-CSRFToken` on every write (readable
// by the page, which is same-origin). Both are SameSite=Lax, and Secure when the request came
// over HTTPS: on a TLS socket, through a trusted proxy that says so (X-Forwarded-Proto), or
// whenever SETT_PUBLIC_URL is https.
import type { IncomingHttpHeaders } from 'node:http';
import type { FastifyReply, FastifyRequest } from 'fastify';

export const SESSION_COOKIE = 'sett_session';
export const CSRF_COOKIE = 'sett_csrftoken';
export const CSRF_HEADER = 'x-csrftoken';

const MAX_COOKIE_HEADER = 8192;

/** One cookie's value from the Cookie header, or undefined (bounded, no decoding surprises). */
export function readCookie(headers: IncomingHttpHeaders, name: string): string | undefined {
  const header = headers.cookie;
  if (typeof header !== 'string' || header.length > MAX_COOKIE_HEADER) return undefined;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq < 0) continue;
    if (part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}

export interface CookiePolicy {
  /** SETT_PUBLIC_URL starts with https: always Secure. */
  publicHttps: boolean;
  /** TRUSTED_PROXY_HOPS > 0: the proxy's X-Forwarded-Proto is believed. */
  trustProxy: boolean;
}

export function isHttps(request: FastifyRequest, policy: CookiePolicy): boolean {
  if (policy.publicHttps) return true;
  if ((request.raw.socket as { encrypted?: boolean }).encrypted) return true;
  if (!policy.trustProxy) return false;
  const proto = request.headers['x-forwarded-proto'];
  const last = (Array.isArray(proto) ? proto.join(',') : (proto ?? '')).split(',').pop()?.trim();
  return last === 'https';
}

function cookie(name: string, value: string, maxAgeSeconds: number, httpOnly: boolean, secure: boolean) {
  return [
    `${name}=${value}`,
    'Path=/',
    `Max-Age=${Math.max(0, Math.floor(maxAgeSeconds))}`,
    'SameSite=Lax',
    ...(httpOnly ? ['HttpOnly'] : []),
    ...(secure ? ['Secure'] : []),
  ].join('; ');
}

export function setSessionCookies(
  request: FastifyRequest,
  reply: FastifyReply,
  policy: CookiePolicy,
  session: { token: string; csrfToken: string; expiresAt: Date },
) {
  const secure = isHttps(request, policy);
  const maxAge = (session.expiresAt.getTime() - Date.now()) / 1000;
  reply.header('set-cookie', [
    cookie(SESSION_COOKIE, session.token, maxAge, true, secure),
    cookie(CSRF_COOKIE, session.csrfToken, maxAge, false, secure),
  ]);
  reply.header('cache-control', 'no-store');
}

export function clearSessionCookies(request: FastifyRequest, reply: FastifyReply, policy: CookiePolicy) {
  const secure = isHttps(request, policy);
  reply.header('set-cookie', [
    cookie(SESSION_COOKIE, '', 0, true, secure),
    cookie(CSRF_COOKIE, '', 0, false, secure),
  ]);
}
