// GET /api/projects/:project_id/feature_flags/:key_or_id/remote_config: the payload of a remote
// configuration flag, decrypted when it is stored encrypted, as posthog-node's
// getRemoteConfigPayload and posthog-python's get_remote_config_payload read it: the body is
// the payload's JSON text as a JSON string (or null), which the SDKs parse twice. The one
// management route that also takes the project secret key (phs_, current or the backup kept
// after a rotation; PostHog allows it for this action only), so it authenticates by itself and
// is mounted ahead of the personal-key middleware. Personal keys need feature_flag:read. Both
// kinds count against the rate limit (personal keys per key and per user, secret keys per
// project). `?token=<project API key>` (sent by the SDKs) picks the project for `@current`
// when the caller can read it.
import express, { type Request, type Response, type Router } from 'express';
import type { PrismaClient, Team } from '@sett/db';
import {
  AuthenticationError,
  ForbiddenError,
  NotFoundError,
  RateLimitedError,
  bearerToken,
} from '@sett/http';
import { decryptFlagPayload } from '@sett/keys';
import { requireScope } from '../auth/auth-context';
import type { KeyAuthenticator } from '../auth/auth-middleware';
import { CURRENT_PROJECT, resolveReadableProjectId } from '../projects/project-access';
import type { RateLimiter, RateLimitSubject } from '../rate-limit/rate-limiter';
import { parseIntId } from '../validate';

const PATHS = [
  '/api/projects/:projectId/feature_flags/:flag/remote_config',
  '/api/projects/:projectId/feature_flags/:flag/remote_config/',
];
const SECRET_KEY_RE = /^phs_[A-Za-z0-9]{20,200}$/;

export interface RemoteConfigRouteDeps {
  prisma: PrismaClient;
  authenticator: KeyAuthenticator;
  limiter: RateLimiter;
  /** deriveFlagPayloadKey(SETT_ENCRYPTION_KEY) */
  payloadKey: Buffer;
}

export function remoteConfigRoutes(deps: RemoteConfigRouteDeps): Router {
  const { prisma } = deps;
  const router = express.Router();

  async function take(subject: RateLimitSubject) {
    const result = await deps.limiter.take(subject);
    if (!result.ok) throw new RateLimitedError(result.retryAfterSeconds);
  }

  /** The project of a secret key, which must be the one the path and token name. */
  async function projectOfSecretKey(
    req: Request,
    key: string,
    projectIdParam: string,
    token: string | undefined,
  ): Promise<number> {
    if (!SECRET_KEY_RE.test(key))
      throw new AuthenticationError('Secret API key is malformed.', 'authentication_failed');
    // Remembered for a few seconds, and throttled per client like personal keys (auth-middleware).
    const found = await deps.authenticator.authenticateSecretKey(req, key);
    const team = { id: found.teamId, apiToken: found.apiToken };
    await take({ key: `secret:${team.id}` });
    if (projectIdParam !== CURRENT_PROJECT && parseIntId(projectIdParam) !== team.id)
      throw new NotFoundError('Project not found.');
    if (token !== undefined && token !== team.apiToken)
      throw new ForbiddenError(
        'This secret key does not belong to the project of this token.',
        'permission_denied',
      );
    return team.id;
  }

  async function projectOfPersonalKey(req: Request, projectIdParam: string, token: string | undefined) {
    const auth = await deps.authenticator.authenticate(req);
    await take({ key: auth.keyId, user: auth.userId });
    requireScope(auth, 'feature_flag:read');
    if (projectIdParam === CURRENT_PROJECT && token !== undefined) {
      const team: Pick<Team, 'id'> | null = await prisma.team.findFirst({
        where: {
          apiToken: token,
          deletedAt: null,
          organization: { memberships: { some: { userId: auth.userId } } },
        },
        select: { id: true },
      });
      if (!team) throw new NotFoundError('Project not found.');
      return team.id;
    }
    return resolveReadableProjectId(prisma, auth, projectIdParam);
  }

  router.get(PATHS, async (req: Request, res: Response) => {
    const projectIdParam = String(req.params.projectId);
    const token = typeof req.query.token === 'string' && req.query.token !== '' ? req.query.token : undefined;
    const bearer = bearerToken(req.headers.authorization);
    const teamId = bearer?.startsWith('phs_')
      ? await projectOfSecretKey(req, bearer, projectIdParam, token)
      : await projectOfPersonalKey(req, projectIdParam, token);

    const flagParam = String(req.params.flag);
    const id = parseIntId(flagParam);
    const flag = await prisma.featureFlag.findFirst({
      where: { teamId, deleted: false, ...(id ? { id } : { key: flagParam }) },
      select: { filters: true, isRemoteConfiguration: true, hasEncryptedPayloads: true },
    });
    // PostHog answers 404 for a flag that is not a remote configuration flag too.
    if (!flag || !flag.isRemoteConfiguration) throw new NotFoundError();
    const payloads = ((flag.filters ?? {}) as { payloads?: Record<string, unknown> }).payloads ?? {};
    const stored = payloads['true'];
    if (stored === undefined || stored === null || stored === '') {
      res.json(null);
      return;
    }
    // A payload that does not decrypt (another SETT_ENCRYPTION_KEY) is a server problem: 500.
    const text = flag.hasEncryptedPayloads
      ? decryptFlagPayload(stored, deps.payloadKey, teamId)
      : typeof stored === 'string'
        ? stored
        : JSON.stringify(stored);
    res.json(text);
  });

  return router;
}
