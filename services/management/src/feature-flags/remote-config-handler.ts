// GET /api/projects/:project_id/feature_flags/:key/remote_config: the payload of a remote
// configuration flag, decrypted when it is stored encrypted, as posthog-node's
// getRemoteConfigPayload and posthog-python's get_remote_config_payload read it: the body is
// the payload's JSON text as a JSON string (or null), which the SDKs parse twice. The one
// management route that also takes the project secret key (auth `personal_or_secret_key`,
// authenticators.ts); a secret key must name its own project. `?token=<project API key>` (sent
// by the SDKs) picks the project for `@current` when the caller can read it, and must be the
// secret key's project's token.
import type { PrismaClient, Team } from '@sett/db';
import { ForbiddenError, NotFoundError } from '@sett/http';
import { decryptFlagPayload } from '@sett/keys';
import { isSecretKeyCaller, type PersonalOrSecretCaller } from '../auth/authenticators';
import { CURRENT_PROJECT, resolveReadableProjectId } from '../projects/project-access';
import { parseIntId } from '../validate';

async function projectOf(
  prisma: PrismaClient,
  caller: PersonalOrSecretCaller,
  projectIdParam: string,
  token: string | undefined,
): Promise<number> {
  if (isSecretKeyCaller(caller)) {
    if (projectIdParam !== CURRENT_PROJECT && parseIntId(projectIdParam) !== caller.teamId)
      throw new NotFoundError('Project not found.');
    if (token !== undefined && token !== caller.apiToken)
      throw new ForbiddenError(
        'This secret key does not belong to the project of this token.',
        'permission_denied',
      );
    return caller.teamId;
  }
  if (projectIdParam === CURRENT_PROJECT && token !== undefined) {
    const team: Pick<Team, 'id'> | null = await prisma.team.findFirst({
      where: {
        apiToken: token,
        deletedAt: null,
        organization: { memberships: { some: { userId: caller.userId } } },
      },
      select: { id: true },
    });
    if (!team) throw new NotFoundError('Project not found.');
    return team.id;
  }
  return resolveReadableProjectId(prisma, caller, projectIdParam);
}

export async function remoteConfigPayload(
  deps: { prisma: PrismaClient; payloadKey: Buffer },
  caller: PersonalOrSecretCaller,
  params: { project_id: string; key: string },
  token: string | undefined,
): Promise<string | null> {
  const teamId = await projectOf(deps.prisma, caller, params.project_id, token || undefined);
  const id = parseIntId(params.key);
  const flag = await deps.prisma.featureFlag.findFirst({
    where: { teamId, deleted: false, ...(id ? { id } : { key: params.key }) },
    select: { filters: true, isRemoteConfiguration: true, hasEncryptedPayloads: true },
  });
  // PostHog answers 404 for a flag that is not a remote configuration flag too.
  if (!flag || !flag.isRemoteConfiguration) throw new NotFoundError();
  const payloads = ((flag.filters ?? {}) as { payloads?: Record<string, unknown> }).payloads ?? {};
  const stored = payloads['true'];
  if (stored === undefined || stored === null || stored === '') return null;
  // A payload that does not decrypt (another SETT_ENCRYPTION_KEY) is a server problem: 500.
  if (flag.hasEncryptedPayloads) return decryptFlagPayload(stored, deps.payloadKey, teamId);
  return typeof stored === 'string' ? stored : JSON.stringify(stored);
}
