// Writes to a project: its SDK settings and its secret API key. Every write drops the remote
// config document (@sett/cache invalidateRemoteConfig) twice: inside the transaction, so a Redis
// that cannot be reached rolls the change back (503) and decide never misses a saved change;
// and after commit, so a rebuild that read the old row during the transaction is dropped too.
import { Prisma, type PrismaClient, type Team } from '@sett/db';
import { invalidateRemoteConfig, type Redis } from '@sett/cache';
import { ForbiddenError, ServiceUnavailableError } from '@sett/http';
import { generateProjectSecretKey, hashProjectSecretKey, maskKey } from '@sett/keys';
import type { Logger } from '@sett/logger';
import type { ProjectUpdate } from './project-schemas';

/** PostHog: only organization admins (level 8) and owners may rotate a project's secret key. */
export const SECRET_KEY_ADMIN_LEVEL = 8;

export interface ProjectService {
  update(team: Team, input: ProjectUpdate): Promise<Team>;
  /** A new `phs_` key; the previous one becomes the backup (still accepted), the old backup is dropped. */
  rotateSecretToken(team: Team, userId: number): Promise<{ team: Team; secretApiToken: string }>;
  /** Stops accepting the previous key. */
  deleteSecretTokenBackup(team: Team, userId: number): Promise<Team>;
}

export function createProjectService({
  prisma,
  redis,
  logger,
}: {
  prisma: PrismaClient;
  redis: Redis;
  logger: Logger;
}): ProjectService {
  async function write(teamId: number, data: Prisma.TeamUpdateInput): Promise<Team> {
    const team = await prisma.$transaction(async (tx) => {
      const updated = await tx.team.update({ where: { id: teamId }, data });
      await invalidate(teamId);
      return updated;
    });
    await invalidate(teamId).catch(() => undefined);
    return team;
  }

  async function invalidate(teamId: number): Promise<void> {
    try {
      await invalidateRemoteConfig(redis, teamId);
    } catch (err) {
      logger.warn('remote config not invalidated; rolling back', { teamId, err: (err as Error).message });
      throw new ServiceUnavailableError('The configuration cache is unavailable; the change was not saved.');
    }
  }

  async function requireAdmin(team: Team, userId: number): Promise<void> {
    const membership = await prisma.organizationMembership.findUnique({
      where: { organizationId_userId: { organizationId: team.organizationId, userId } },
      select: { level: true },
    });
    if (!membership || membership.level < SECRET_KEY_ADMIN_LEVEL)
      throw new ForbiddenError('You must be an organization admin to manage the project secret API key.');
  }

  return {
    update(team, input) {
      const data: Prisma.TeamUpdateInput = {};
      if (input.name !== undefined) data.name = input.name;
      if (input.autocapture_opt_out !== undefined) data.autocaptureOptOut = input.autocapture_opt_out;
      if (input.autocapture_exceptions_opt_in !== undefined)
        data.autocaptureExceptionsOptIn = input.autocapture_exceptions_opt_in;
      if (input.heatmaps_opt_in !== undefined) data.heatmapsOptIn = input.heatmaps_opt_in;
      if (input.capture_performance_opt_in !== undefined)
        data.capturePerformanceOptIn = input.capture_performance_opt_in;
      if (input.autocapture_web_vitals_opt_in !== undefined)
        data.autocaptureWebVitalsOptIn = input.autocapture_web_vitals_opt_in;
      if (input.autocapture_web_vitals_allowed_metrics !== undefined)
        data.autocaptureWebVitalsAllowedMetrics =
          input.autocapture_web_vitals_allowed_metrics === null
            ? Prisma.DbNull
            : [...input.autocapture_web_vitals_allowed_metrics];
      if (input.capture_dead_clicks !== undefined) data.captureDeadClicks = input.capture_dead_clicks;
      if (input.session_recording_opt_in !== undefined)
        data.sessionRecordingOptIn = input.session_recording_opt_in;
      if (input.surveys_opt_in !== undefined) data.surveysOptIn = input.surveys_opt_in;
      return write(team.id, data);
    },

    async rotateSecretToken(team, userId) {
      await requireAdmin(team, userId);
      const secretApiToken = generateProjectSecretKey();
      const updated = await write(team.id, {
        secretApiTokenHash: hashProjectSecretKey(secretApiToken),
        secretApiTokenMask: maskKey(secretApiToken),
        secretApiTokenBackupHash: team.secretApiTokenHash,
      });
      return { team: updated, secretApiToken };
    },

    async deleteSecretTokenBackup(team, userId) {
      await requireAdmin(team, userId);
      return write(team.id, { secretApiTokenBackupHash: null });
    },
  };
}
