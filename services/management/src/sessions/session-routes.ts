// Signing in and out in a browser, as PostHog's API has it: POST /api/login/ with email and
// password, then POST /api/login/token/ with the second factor when 2FA is on, and
// POST /api/logout/. The session lives in cookies (cookies.ts) and server-side
// (session-store.ts); failures are limited per account and per address (login-guard.ts).
import { shape } from '../api-schemas';
import { r } from '../route-kit';
import { AuthenticationError } from '@sett/http';
import { SESSION_COOKIE, clearSessionCookies, readCookie, setSessionCookies } from './cookies';
import { requireCsrf } from './session-auth';
import { SecondFactorRequiredError, clientOf } from './sign-in';

const successAnswer = shape({ success: { type: 'boolean' } });

export const sessionRoutes = [
  r({
    method: 'POST',
    url: '/api/login/',
    summary: 'Sign in with email and password (a session cookie); 401 2fa_required when a code must follow',
    description:
      'Sets the HttpOnly session cookie (sett_session) and the CSRF cookie (sett_csrftoken) that writes echo in ' +
      'X-CSRFToken. With 2FA on, answers 401 with code 2fa_required and a pending session: POST /api/login/token/ ' +
      'next. Failed sign-ins lock the account and the address for LOGIN_LOCKOUT_MS (429).',
    tag: 'sessions',
    compat: { posthog: 'same' },
    auth: { kind: 'none' },
    schema: {
      body: {
        type: 'object',
        required: ['email', 'password'],
        additionalProperties: false,
        properties: {
          email: { type: 'string', minLength: 1, maxLength: 254 },
          password: { type: 'string', minLength: 1, maxLength: 128 },
        },
      },
      response: { 200: successAnswer },
    },
    handler: async ({ body, request, reply }, d) => {
      const { session, secondFactor } = await d.signIn.withPassword(
        body.email,
        body.password,
        clientOf(request, d.trustedProxyHops),
      );
      setSessionCookies(request, reply, d.cookiePolicy, session);
      if (secondFactor) throw new SecondFactorRequiredError();
      return { success: true };
    },
  }),
  r({
    method: 'POST',
    url: '/api/login/token/',
    summary: 'The second factor of a pending sign-in: a TOTP code or a backup code',
    tag: 'sessions',
    compat: { posthog: 'same' },
    auth: { kind: 'none' },
    schema: {
      body: {
        type: 'object',
        required: ['token'],
        additionalProperties: false,
        properties: { token: { type: 'string', minLength: 1, maxLength: 64 } },
      },
      response: { 200: successAnswer },
    },
    handler: async ({ body, request, reply }, d) => {
      const token = readCookie(request.headers, SESSION_COOKIE);
      const pending = token ? await d.sessions.find(token) : null;
      if (!pending || pending.verified)
        throw new AuthenticationError(
          'No sign-in is waiting for a code: POST /api/login/ first.',
          'login_expired',
        );
      const session = await d.signIn.withSecondFactor(
        { sessionId: pending.sessionId, userId: pending.auth.userId },
        body.token,
        clientOf(request, d.trustedProxyHops),
      );
      setSessionCookies(request, reply, d.cookiePolicy, session);
      return { success: true };
    },
  }),
  r({
    method: 'POST',
    url: '/api/logout/',
    summary: 'End the browser session (its cookies are cleared)',
    description: 'A signed-in session must send X-CSRFToken, as for any write.',
    tag: 'sessions',
    compat: { posthog: 'differs', note: 'answers 200 with success instead of redirecting' },
    auth: { kind: 'none' },
    schema: { response: { 200: successAnswer } },
    handler: async ({ request, reply }, d) => {
      const token = readCookie(request.headers, SESSION_COOKIE);
      const session = token ? await d.sessions.find(token) : null;
      if (session?.verified) requireCsrf(request, session.csrfToken);
      if (session) await d.sessions.end(session.sessionId);
      clearSessionCookies(request, reply, d.cookiePolicy);
      return { success: true };
    },
  }),
];
