// CORS for the public endpoints (capture, decide's SDK reads). One policy, `publicCorsHeaders`:
// any page may read these answers (the caller's origin is echoed, or * without an Origin), on
// every response, errors included, so a browser can read a 4xx/5xx; and never with credentials.
// Capture and decide read no cookies (the project key travels in the request), so
// `Access-Control-Allow-Credentials` could only let a page read, with its visitor's cookies,
// what something in front of Sett guards by cookie. posthog-js sends without credentials (fetch's
// default; 1.449's XHR transport no longer sets withCredentials). The cost: older posthog-js
// (1.251 and before) falling back to XHR (no fetch, or `api_transport: 'XHR'`) sends with
// credentials, and its browser will not hand it these answers. Private reads (management, local
// evaluation: secret keys) send no CORS headers at all.

/** The CORS headers of every public answer, for a request from `origin` (its Origin header). */
export function publicCorsHeaders(origin: string | undefined): Record<string, string> {
  return { 'Access-Control-Allow-Origin': allowedOrigin(origin), Vary: 'Origin' };
}

/** publicCorsHeaders set on `res` directly (the hot paths: no object per request). */
export function setPublicCorsHeaders(
  res: { setHeader(name: string, value: string): unknown },
  origin: string | undefined,
): void {
  res.setHeader('Access-Control-Allow-Origin', allowedOrigin(origin));
  res.setHeader('Vary', 'Origin');
}

const allowedOrigin = (origin: string | undefined) => (origin && origin !== 'null' ? origin : '*');
