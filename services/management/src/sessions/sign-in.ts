// Signing in as PostHog's login does: a password, then (with 2FA on) a TOTP code or a backup
// code. Every refusal is the same for an unknown email and a wrong password, and costs the same
// time (a password hash is checked either way), so the answers do not tell which emails exist.
// Failures count toward the lockouts of login-guard.ts; a TOTP code is accepted once (a replay
// within its 90 s of validity is refused).
import type { PrismaClient } from '@sett/db';
import type { Redis } from '@sett/cache';
import type { FastifyRequest } from 'fastify';
import { AuthenticationError, SettError, ValidationError, clientIp } from '@sett/http';
import { checkPassword, hashPassword, openTotpSecret, type CredentialKeys } from '@sett/keys';
import {
  createUserCredentials,
  totpAssociatedData,
  totpCodeValid,
  withPasswordHashing,
} from '../users/user-credentials';
import type { LoginGuard } from './login-guard';
import type { NewSession, SessionStore } from './session-store';

/** 401 asking for the second factor: PostHog's answer to a correct password with 2FA on. */
export class SecondFactorRequiredError extends SettError {
  constructor() {
    super(401, 'authentication_error', '2fa_required', '2FA is required.');
  }
}

const INVALID_CREDENTIALS = 'Invalid email or password.';
const TOTP_REPLAY_MS = 90_000;

/** A hash of a password nobody has, checked for unknown emails so that they cost the same. */
let dummyHash: Promise<string> | undefined;

export interface ClientInfo {
  ip: string;
  userAgent?: string;
}

/** Who is signing in: the client address (TRUSTED_PROXY_HOPS decides) and the user agent. */
export function clientOf(request: FastifyRequest, trustedProxyHops: number): ClientInfo {
  const ua = request.headers['user-agent'];
  return {
    ip: clientIp(request.headers, request.socket.remoteAddress, { trustedProxyHops }) ?? 'unknown',
    userAgent: typeof ua === 'string' ? ua : undefined,
  };
}

export function createSignIn(deps: {
  prisma: PrismaClient;
  redis: Redis;
  keys: CredentialKeys;
  sessions: SessionStore;
  guard: LoginGuard;
}) {
  const { prisma, redis, keys, sessions, guard } = deps;
  const credentials = createUserCredentials(prisma, keys);

  async function totpValid(userId: number, stored: string, email: string, code: string): Promise<boolean> {
    const secret = openTotpSecret(stored, keys.totpSecret, totpAssociatedData(userId));
    if (!totpCodeValid(secret.base32, email, code)) return false;
    // Once per code: the first to claim it wins, a replay is a failure.
    const claimed = await redis.set(`login:totp-used:${userId}:${code}`, '1', 'PX', TOTP_REPLAY_MS, 'NX');
    return claimed === 'OK';
  }

  return {
    /** A correct password: a session (verified unless 2FA is on; then 401 2fa_required). */
    async withPassword(
      email: string,
      password: string,
      client: ClientInfo,
    ): Promise<{ session: NewSession; secondFactor: boolean }> {
      await guard.check(email, client.ip);
      const user = await prisma.user.findFirst({
        where: { email: { equals: email.trim(), mode: 'insensitive' } },
        select: { id: true, password: true, isActive: true, totpEnabled: true },
      });
      let valid = false;
      if (user?.password && user.isActive) valid = await credentials.verifyPassword(user.id, password);
      else {
        dummyHash ??= withPasswordHashing(() => hashPassword('sett-no-such-user'));
        const stored = await dummyHash;
        await withPasswordHashing(() => checkPassword(password, stored));
      }
      if (!user || !valid) {
        await guard.failed(email, client.ip);
        throw new AuthenticationError(INVALID_CREDENTIALS, 'invalid_credentials');
      }
      await guard.succeeded(email);
      const session = await sessions.create(user.id, !user.totpEnabled, client);
      return { session, secondFactor: user.totpEnabled };
    },

    /** The second factor of a pending session: a TOTP code or an unused backup code. */
    async withSecondFactor(
      pending: { sessionId: string; userId: number },
      code: string,
      client: ClientInfo,
    ): Promise<NewSession> {
      const user = await prisma.user.findUnique({
        where: { id: pending.userId },
        select: { id: true, email: true, totpSecret: true, totpEnabled: true },
      });
      if (!user) throw new AuthenticationError('The sign-in has expired: start again.', 'login_expired');
      await guard.check(user.email, client.ip);
      const clean = code.replace(/\s+/g, '');
      const ok =
        user.totpEnabled && user.totpSecret && /^\d{6}$/.test(clean)
          ? await totpValid(user.id, user.totpSecret, user.email, clean)
          : await credentials.useBackupCode(user.id, clean);
      if (!ok) {
        await guard.failed(user.email, client.ip);
        throw new ValidationError('The code is not valid.', 'token', '2fa_invalid');
      }
      await guard.succeeded(user.email);
      const session = await sessions.promote(pending.sessionId, user.id, client);
      if (!session) throw new AuthenticationError('The sign-in has expired: start again.', 'login_expired');
      return session;
    },
  };
}

export type SignIn = ReturnType<typeof createSignIn>;
