// Writes to a project: its SDK settings and its secret API key. Every write drops the remote
// config document (@sett/cache invalidateRemoteConfig) twice: inside the transaction, so a Redis
// that cannot be reached rolls the change back (503) and decide never misses a saved change;
// and after commit, so a rebuild that read the old row during the transaction is dropped too.
// Creating, deleting (soft: deleted_at, purged later by the job runner) and rotating the public
// API token: a token that stops naming the project is revoked in Redis inside the transaction
// (Redis down → 503, rolled back) and again after commit, with a pub/sub message that makes
// every capture and decide process drop its in-process copy at once.
import { parsePropertyFilters } from '@sett/query';
import { Prisma, type PrismaClient, type Team } from '@sett/db';
import { invalidateRemoteConfig, revokeProjectToken, writeProjectToken, type Redis } from '@sett/cache';
import { ForbiddenError, NotFoundError, ServiceUnavailableError, ValidationError } from '@sett/http';
import { generateProjectSecretKey, generateProjectToken, hashProjectSecretKey, maskKey } from '@sett/keys';
import { ADMIN_LEVEL } from '../organizations/levels';
import type { Logger } from '@sett/logger';
import { checkTimezone, type ProjectCreate, type ProjectUpdate } from './project-schemas';

/** PostHog: only organization admins (level 8) and owners may rotate a project's keys or delete it. */
export const SECRET_KEY_ADMIN_LEVEL = ADMIN_LEVEL;

export interface ProjectService {
  /** A new project in `input.organization` (default: the user's current one); admins and owners. */
  create(input: ProjectCreate, userId: number, currentOrganizationId: string | null): Promise<Team>;
  /** Soft delete: the project is gone for every API at once; its token is revoked. Admins and owners. */
  remove(team: Team, userId: number): Promise<void>;
  /** A new public API token; the old one stops working everywhere. Admins and owners. */
  resetToken(team: Team, userId: number): Promise<Team>;
  /** Settings any member may change; data_retention_days (it deletes data) needs an admin. */
  update(team: Team, input: ProjectUpdate, userId: number): Promise<Team>;
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

  async function levelIn(organizationId: string, userId: number): Promise<number | undefined> {
    const membership = await prisma.organizationMembership.findUnique({
      where: { organizationId_userId: { organizationId, userId } },
      select: { level: true },
    });
    return membership?.level;
  }

  async function requireAdmin(team: Team, userId: number, what = 'manage the project secret API key') {
    if (((await levelIn(team.organizationId, userId)) ?? 0) < SECRET_KEY_ADMIN_LEVEL)
      throw new ForbiddenError(`You must be an organization admin to ${what}.`);
  }

  async function revoke(token: string): Promise<void> {
    try {
      await revokeProjectToken(redis, token);
    } catch (err) {
      logger.warn('project token not revoked; rolling back', { err: (err as Error).message });
      throw new ServiceUnavailableError('The token cache is unavailable; the change was not saved.');
    }
  }

  /**
   * Runs `change` in a transaction that locks the project's row, reads its token as it is now
   * (not as the caller loaded it: a concurrent reset_token may have replaced it since) and
   * revokes that token before commit, and again after it. 404 when the project is gone.
   */
  async function withRevokedToken<T>(
    teamId: number,
    change: (tx: Prisma.TransactionClient) => Promise<T>,
  ): Promise<T> {
    let oldToken = '';
    const result = await prisma.$transaction(async (tx) => {
      const [row] = await tx.$queryRaw<{ api_token: string }[]>`
        SELECT api_token FROM teams WHERE id = ${teamId} AND deleted_at IS NULL FOR UPDATE`;
      if (!row) throw new NotFoundError('Project not found.');
      oldToken = row.api_token;
      const out = await change(tx);
      await revoke(oldToken);
      return out;
    });
    // A resolver that read the old row while the transaction ran may have written it back.
    await revokeProjectToken(redis, oldToken).catch(() => undefined);
    return result;
  }

  return {
    async create(input, userId, currentOrganizationId) {
      checkTimezone(input.timezone);
      const organizationId = input.organization?.toLowerCase() ?? currentOrganizationId;
      const level = organizationId ? await levelIn(organizationId, userId) : undefined;
      // Another organization's id reads as unknown: its existence is not confirmed.
      if (!organizationId || level === undefined)
        throw new ValidationError('Organization not found.', 'organization', 'does_not_exist');
      if (level < ADMIN_LEVEL)
        throw new ForbiddenError('You must be an organization admin to create projects.');
      const team = await prisma.team.create({
        data: {
          organizationId,
          name: input.name,
          apiToken: generateProjectToken(),
          ...(input.timezone ? { timezone: input.timezone } : {}),
        },
      });
      // Published so the first event needs no Postgres query (a failure only costs that query).
      await writeProjectToken(redis, team.apiToken, { teamId: team.id, organizationId }).catch((err: Error) =>
        logger.warn('new project token not cached', { err: err.message }),
      );
      return team;
    },

    async remove(team, userId) {
      await requireAdmin(team, userId, 'delete a project');
      await withRevokedToken(team.id, async (tx) => {
        await tx.team.update({
          where: { id: team.id },
          // The secret keys stop working too (local evaluation, remote config payloads).
          data: { deletedAt: new Date(), secretApiTokenHash: null, secretApiTokenBackupHash: null },
        });
        await tx.user.updateMany({ where: { currentTeamId: team.id }, data: { currentTeamId: null } });
      });
      await invalidate(team.id).catch(() => undefined);
    },

    async resetToken(team, userId) {
      await requireAdmin(team, userId, "reset the project's API token");
      const apiToken = generateProjectToken();
      try {
        const updated = await withRevokedToken(team.id, async (tx) => {
          const changed = await tx.team.update({ where: { id: team.id }, data: { apiToken } });
          // Published before commit, under the row lock: a reset_token or DELETE that follows
          // reads this token only after this write, so its revocation cannot come first.
          await writeProjectToken(redis, apiToken, {
            teamId: changed.id,
            organizationId: changed.organizationId,
          }).catch((err: Error) => logger.warn('new project token not cached', { err: err.message }));
          return changed;
        });
        await invalidate(team.id).catch(() => undefined);
        return updated;
      } catch (err) {
        // Not committed: the new token names nothing.
        await revokeProjectToken(redis, apiToken).catch(() => undefined);
        throw err;
      }
    },

    async update(team, input, userId) {
      checkTimezone(input.timezone);
      if (input.data_retention_days !== undefined)
        await requireAdmin(team, userId, "change the project's data retention");
      const data: Prisma.TeamUpdateInput = {};
      if (input.name !== undefined) data.name = input.name;
      if (input.timezone !== undefined) data.timezone = input.timezone;
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
      if (input.anonymize_ips !== undefined) data.anonymizeIps = input.anonymize_ips;
      if (input.geoip_enabled !== undefined) data.geoipEnabled = input.geoip_enabled;
      if (input.data_retention_days !== undefined) data.dataRetentionDays = input.data_retention_days;
      if (input.test_account_filters !== undefined) {
        // Checked as queries will read them: a 400 naming the filter now, not on every query.
        parsePropertyFilters(JSON.stringify(input.test_account_filters), 'test_account_filters', [
          'event',
          'person',
          'group',
        ]);
        data.testAccountFilters = input.test_account_filters as Prisma.InputJsonValue;
      }
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
