// Feature flags of a project. Every write runs in one transaction holding a per-project
// advisory lock: change the row (version + 1), read back all live flags and rewrite the
// project's flag list in Redis (which also notifies decide). The lock orders concurrent writers,
// across processes too, so the list in Redis is always the one of the last committed write.
// If Redis is down the write fails (503) and rolls back rather than leaving decide stale.
import { Prisma, type FeatureFlag, type PrismaClient, type User } from '@sett/db';
import { writeFlagList, type Redis } from '@sett/cache';
import type { FlagDefinition, FlagFilters } from '@sett/flags';
import { NotFoundError, ServiceUnavailableError, ValidationError } from '@sett/http';
import type { Logger } from '@sett/logger';
import type { Page } from '../pagination/pagination';
import type { FeatureFlagCreateBody, FeatureFlagUpdateBody } from './feature-flag-schemas';
import { checkFlagFilters } from './flag-filters';

/** First key of pg_advisory_xact_lock(int, int): the namespace of "flag list of team N" locks. */
const FLAG_LOCK_NAMESPACE = 7_246_001;

export type Tx = Prisma.TransactionClient;
type FlagRow = FeatureFlag & {
  createdBy?: Pick<User, 'id' | 'uuid' | 'distinctId' | 'firstName' | 'lastName' | 'email'> | null;
};

const createdBySelect = {
  select: { id: true, uuid: true, distinctId: true, firstName: true, lastName: true, email: true },
} as const;

export function toFlagDefinition(f: FeatureFlag): FlagDefinition {
  return {
    id: f.id,
    team_id: f.teamId,
    key: f.key,
    name: f.name,
    filters: (f.filters ?? {}) as FlagFilters,
    active: f.active,
    deleted: f.deleted,
    ensure_experience_continuity: f.ensureExperienceContinuity,
    version: f.version,
    has_encrypted_payloads: f.hasEncryptedPayloads,
  };
}

/** PostHog's feature flag shape. */
export function featureFlagJson(f: FlagRow) {
  return {
    id: f.id,
    team_id: f.teamId,
    name: f.name,
    key: f.key,
    filters: f.filters,
    deleted: f.deleted,
    active: f.active,
    ensure_experience_continuity: f.ensureExperienceContinuity,
    has_encrypted_payloads: f.hasEncryptedPayloads,
    version: f.version,
    created_at: f.createdAt.toISOString(),
    created_by: f.createdBy
      ? {
          id: f.createdBy.id,
          uuid: f.createdBy.uuid,
          distinct_id: f.createdBy.distinctId,
          first_name: f.createdBy.firstName,
          last_name: f.createdBy.lastName,
          email: f.createdBy.email,
        }
      : null,
  };
}

export type FeatureFlagJson = ReturnType<typeof featureFlagJson>;

export function createFeatureFlagService({
  prisma,
  redis,
  logger,
}: {
  prisma: PrismaClient;
  redis: Redis;
  logger: Logger;
}) {
  /** Runs `fn` under the project's flag lock and publishes the resulting flag list before commit. */
  async function writeFlags<T>(teamId: number, fn: (tx: Tx) => Promise<T>): Promise<T> {
    return prisma.$transaction(
      async (tx) => {
        await tx.$queryRaw`SELECT 1 AS locked FROM (SELECT pg_advisory_xact_lock(${FLAG_LOCK_NAMESPACE}::int, ${teamId}::int)) AS l`;
        const out = await fn(tx);
        const flags = await tx.featureFlag.findMany({
          where: { teamId, deleted: false },
          orderBy: { id: 'asc' },
        });
        try {
          await writeFlagList(redis, { teamId, updatedAt: Date.now(), flags: flags.map(toFlagDefinition) });
        } catch (err) {
          logger.warn('flag list not written to redis; rolling back', {
            teamId,
            err: (err as Error).message,
          });
          throw new ServiceUnavailableError(
            'The flag cache is unavailable; the change was not saved. Retry later.',
          );
        }
        return out;
      },
      { timeout: 15_000, maxWait: 10_000 },
    );
  }

  async function checkFilters(tx: Tx, teamId: number, filters: FlagFilters) {
    const index = filters.aggregation_group_type_index;
    const indexes =
      index === undefined || index === null
        ? new Set<number>()
        : new Set(
            (await tx.groupTypeMapping.findMany({ where: { teamId }, select: { groupTypeIndex: true } })).map(
              (g) => g.groupTypeIndex,
            ),
          );
    checkFlagFilters(filters, indexes);
  }

  async function checkKeyFree(tx: Tx, teamId: number, key: string, exceptId?: number) {
    const clash = await tx.featureFlag.findFirst({
      where: { teamId, key, deleted: false, ...(exceptId ? { id: { not: exceptId } } : {}) },
      select: { id: true },
    });
    if (clash) throw new ValidationError('There is already a feature flag with this key.', 'key', 'unique');
  }

  async function findLive(tx: Tx | PrismaClient, teamId: number, id: number) {
    const flag = await tx.featureFlag.findFirst({ where: { id, teamId, deleted: false } });
    if (!flag) throw new NotFoundError();
    return flag;
  }

  const withCreator = (tx: Tx | PrismaClient, id: number) =>
    tx.featureFlag.findUniqueOrThrow({ where: { id }, include: { createdBy: createdBySelect } });

  return {
    writeFlags,
    checkFilters,

    async list(teamId: number, page: Page) {
      const where = { teamId, deleted: false };
      const [count, rows] = await Promise.all([
        prisma.featureFlag.count({ where }),
        prisma.featureFlag.findMany({
          where,
          orderBy: { id: 'desc' },
          skip: page.offset,
          take: page.limit,
          include: { createdBy: createdBySelect },
        }),
      ]);
      return { count, results: rows.map(featureFlagJson) };
    },

    async retrieve(teamId: number, id: number) {
      await findLive(prisma, teamId, id);
      return featureFlagJson(await withCreator(prisma, id));
    },

    async create(teamId: number, userId: number, body: FeatureFlagCreateBody) {
      const filters = (body.filters ?? { groups: [] }) as FlagFilters;
      return writeFlags(teamId, async (tx) => {
        await checkKeyFree(tx, teamId, body.key);
        await checkFilters(tx, teamId, filters);
        const row = await tx.featureFlag.create({
          data: {
            teamId,
            key: body.key,
            name: body.name ?? '',
            filters: filters as Prisma.InputJsonValue,
            active: body.active ?? true,
            ensureExperienceContinuity: body.ensure_experience_continuity ?? false,
            createdById: userId,
          },
        });
        return featureFlagJson(await withCreator(tx, row.id));
      });
    },

    async update(teamId: number, id: number, body: FeatureFlagUpdateBody) {
      return writeFlags(teamId, async (tx) => {
        const flag = await findLive(tx, teamId, id);
        if (body.deleted === true) await checkNotInUse(tx, id);
        if (body.key !== undefined && body.key !== flag.key) await checkKeyFree(tx, teamId, body.key, id);
        let filters = body.filters as FlagFilters | undefined;
        if (filters) await checkFilters(tx, teamId, filters);
        if (body.key !== undefined && body.key !== flag.key)
          filters = renameEnrollment(filters ?? (flag.filters as FlagFilters), body.key);
        await tx.featureFlag.update({
          where: { id },
          data: {
            ...(body.key !== undefined ? { key: body.key } : {}),
            ...(body.name !== undefined ? { name: body.name } : {}),
            ...(filters !== undefined ? { filters: filters as Prisma.InputJsonValue } : {}),
            ...(body.active !== undefined ? { active: body.active } : {}),
            ...(body.ensure_experience_continuity !== undefined
              ? { ensureExperienceContinuity: body.ensure_experience_continuity }
              : {}),
            ...(body.deleted !== undefined ? { deleted: body.deleted } : {}),
            version: { increment: 1 },
          },
        });
        return featureFlagJson(await withCreator(tx, id));
      });
    },

    /** Soft delete, as PostHog: the row stays (deleted = true) and its key becomes reusable. */
    async remove(teamId: number, id: number) {
      await writeFlags(teamId, async (tx) => {
        await findLive(tx, teamId, id);
        await checkNotInUse(tx, id);
        await tx.featureFlag.update({ where: { id }, data: { deleted: true, version: { increment: 1 } } });
      });
    },
  };
}

/** PostHog refuses to delete a flag an early access feature still uses. */
async function checkNotInUse(tx: Tx, flagId: number) {
  const feature = await tx.earlyAccessFeature.findFirst({
    where: { featureFlagId: flagId },
    select: { id: true },
  });
  if (feature)
    throw new ValidationError(
      'Cannot delete a feature flag that is in use with early access features. Delete the early access feature first.',
      'deleted',
      'in_use',
    );
}

/** A renamed flag keeps its enrollment condition pointing at the new key (as PostHog does). */
function renameEnrollment(filters: FlagFilters, newKey: string): FlagFilters {
  if (!filters.super_groups) return filters;
  return {
    ...filters,
    super_groups: filters.super_groups.map((g) => ({
      ...g,
      properties: (g.properties ?? []).map((p) =>
        p.key.startsWith('$feature_enrollment/') ? { ...p, key: `$feature_enrollment/${newKey}` } : p,
      ),
    })),
  };
}

export type FeatureFlagService = ReturnType<typeof createFeatureFlagService>;
