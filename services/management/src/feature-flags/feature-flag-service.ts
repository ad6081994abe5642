// Feature flags of a project. Every write runs in one transaction holding a per-project
// advisory lock: change the row (version + 1), read back all live flags and rewrite the
// project's flag list in Redis (which also notifies decide). The lock orders concurrent writers,
// across processes too, so the list in Redis is always the one of the last committed write.
// If Redis is down the write fails (503) and rolls back rather than leaving decide stale.
// Remote configuration flags stay out of that list (decide never evaluates or sends them), and
// with has_encrypted_payloads the payloads are stored encrypted (@sett/keys flag-payloads) and
// shown decrypted only to API callers (personal keys) and the remote_config endpoint.
import { Prisma, type FeatureFlag, type PrismaClient, type User } from '@sett/db';
import { writeFlagList, type Redis } from '@sett/cache';
import { flagRegexPatterns, type FlagDefinition, type FlagFilters, type RegexChecker } from '@sett/flags';
import { NotFoundError, ServiceUnavailableError, ValidationError } from '@sett/http';
import { SecretDecryptionError, decryptFlagPayloads, encryptFlagPayloads } from '@sett/keys';
import type { Logger } from '@sett/logger';
import type { Page } from '../pagination/pagination';
import type { FeatureFlagCreateBody, FeatureFlagUpdateBody } from './feature-flag-schemas';
import { flagReferences } from '../cohorts/cohort-filters';
import { checkFlagFilters, checkFlagReferences } from './flag-filters';

/** First key of pg_advisory_xact_lock(int, int): the namespace of "flag list of team N" locks. */
const FLAG_LOCK_NAMESPACE = 7_246_001;

/**
 * Takes the project's flag lock for the rest of the transaction. Cohort writes take the same
 * lock: a flag's cohort references are checked against the cohorts, and a cohort's deletion
 * against the flags, so the two kinds of writes must not interleave.
 */
export async function lockProjectDefinitions(tx: Tx, teamId: number): Promise<void> {
  await tx.$queryRaw`SELECT 1 AS locked FROM (SELECT pg_advisory_xact_lock(${FLAG_LOCK_NAMESPACE}::int, ${teamId}::int)) AS l`;
}

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
    is_remote_configuration: f.isRemoteConfiguration,
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

/** What PostHog shows in place of a payload it cannot decrypt for the caller. */
export const REDACTED_PAYLOAD_VALUE = '"********* (encrypted)"';

function payloadsOf(filters: FlagFilters): Record<string, unknown> | undefined {
  const payloads = filters.payloads;
  return payloads && typeof payloads === 'object' ? payloads : undefined;
}

/** Filters as stored: payloads encrypted when the flag has encrypted payloads. */
export function sealFilters(
  filters: FlagFilters,
  encrypted: boolean,
  key: Buffer,
  teamId: number,
): FlagFilters {
  const payloads = payloadsOf(filters);
  if (!encrypted || !payloads) return filters;
  return { ...filters, payloads: encryptFlagPayloads(payloads, key, teamId) };
}

/**
 * Filters with plaintext payloads. A payload that does not decrypt (another SETT_ENCRYPTION_KEY)
 * is shown redacted, or with `strict` refused, so that it is never re-encrypted as a value.
 */
export function openFilters(f: FeatureFlag, key: Buffer, strict = false): FlagFilters {
  const filters = (f.filters ?? {}) as FlagFilters;
  const payloads = payloadsOf(filters);
  if (!f.hasEncryptedPayloads || !payloads) return filters;
  try {
    return { ...filters, payloads: decryptFlagPayloads(payloads, key, f.teamId) };
  } catch (err) {
    if (!(err instanceof SecretDecryptionError)) throw err;
    if (strict)
      throw new ValidationError(
        'The stored payloads cannot be decrypted with the current encryption key: send new filters.',
        'filters',
      );
    const redacted: Record<string, string> = {};
    for (const name of Object.keys(payloads)) redacted[name] = REDACTED_PAYLOAD_VALUE;
    return { ...filters, payloads: redacted };
  }
}

export function createFeatureFlagService({
  prisma,
  redis,
  logger,
  payloadKey,
  regexes,
}: {
  prisma: PrismaClient;
  redis: Redis;
  logger: Logger;
  /** deriveFlagPayloadKey(SETT_ENCRYPTION_KEY) */
  payloadKey: Buffer;
  /** Settles new patterns within the request's budget, large ones off the event loop. */
  regexes: RegexChecker;
}) {
  /** The API shape, payloads decrypted (callers of the API are personal API keys, as in PostHog). */
  const toJson = (f: FlagRow) =>
    featureFlagJson({ ...f, filters: openFilters(f, payloadKey) as Prisma.JsonValue });

  /** Runs `fn` under the project's flag lock and publishes the resulting flag list before commit. */
  async function writeFlags<T>(teamId: number, fn: (tx: Tx) => Promise<T>): Promise<T> {
    return prisma.$transaction(
      async (tx) => {
        await lockProjectDefinitions(tx, teamId);
        const out = await fn(tx);
        const flags = await tx.featureFlag.findMany({
          where: { teamId, deleted: false, isRemoteConfiguration: false },
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

  /** `flagId`: the flag being updated (undefined on create). */
  async function checkFilters(tx: Tx, teamId: number, filters: FlagFilters, flagId?: number) {
    const index = filters.aggregation_group_type_index;
    const indexes =
      index === undefined || index === null
        ? new Set<number>()
        : new Set(
            (await tx.groupTypeMapping.findMany({ where: { teamId }, select: { groupTypeIndex: true } })).map(
              (g) => g.groupTypeIndex,
            ),
          );
    // New patterns are settled within the request's budget before the filters are checked, so a
    // flag with many does not stall other requests.
    const tooCostly = await regexes.prepare(flagRegexPatterns(filters));
    if (tooCostly) throw new ValidationError(`filters: ${tooCostly}.`, 'filters', 'invalid_input');
    checkFlagFilters(filters, indexes);
    const refs = flagReferences(filters);
    if (refs.cohorts.length === 0 && refs.flags.length === 0) return;
    const [cohorts, flags] = await Promise.all([
      refs.cohorts.length === 0
        ? []
        : tx.cohort.findMany({
            where: { teamId, deleted: false },
            select: { id: true, name: true, isStatic: true, filters: true },
          }),
      refs.flags.length === 0
        ? []
        : tx.featureFlag.findMany({
            where: { teamId, deleted: false },
            select: { id: true, key: true, filters: true },
          }),
    ]);
    checkFlagReferences(filters, {
      flagId,
      cohorts: new Map(cohorts.map((c) => [c.id, c])),
      flags: flags.map((f) => ({ id: f.id, key: f.key, filters: (f.filters ?? {}) as FlagFilters })),
    });
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

  const withCreator = async (tx: Tx | PrismaClient, id: number) =>
    toJson(
      await tx.featureFlag.findUniqueOrThrow({ where: { id }, include: { createdBy: createdBySelect } }),
    );

  /** Flags of the project with at least one variant (PostHog's multivariant type). */
  async function flagIdsWithVariants(teamId: number): Promise<number[]> {
    const rows = await prisma.$queryRaw<{ id: number }[]>`
      SELECT id FROM feature_flags WHERE team_id = ${teamId} AND deleted = false
        AND jsonb_typeof(filters->'multivariate'->'variants') = 'array'
        AND jsonb_array_length(filters->'multivariate'->'variants') > 0`;
    return rows.map((r) => r.id);
  }

  return {
    writeFlags,
    checkFilters,

    /** Newest first; PostHog's list filters (search in key or name, active, type). */
    async list(teamId: number, page: Page, filters: FlagListFilters = {}) {
      const where: Prisma.FeatureFlagWhereInput = { teamId, deleted: false };
      const and: Prisma.FeatureFlagWhereInput[] = [];
      if (filters.search)
        and.push({
          OR: [
            { key: { contains: filters.search, mode: 'insensitive' } },
            { name: { contains: filters.search, mode: 'insensitive' } },
          ],
        });
      if (filters.active !== undefined) and.push({ active: filters.active });
      if (filters.type === 'remote_config') and.push({ isRemoteConfiguration: true });
      // Sett has no experiments: no flag is an experiment's.
      if (filters.type === 'experiment') and.push({ id: { lt: 0 } });
      if (filters.type === 'boolean' || filters.type === 'multivariant') {
        const ids = await flagIdsWithVariants(teamId);
        and.push(filters.type === 'boolean' ? { id: { notIn: ids } } : { id: { in: ids } });
      }
      if (and.length > 0) where.AND = and;
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
      return { count, results: rows.map(toJson) };
    },

    async retrieve(teamId: number, id: number) {
      await findLive(prisma, teamId, id);
      return withCreator(prisma, id);
    },

    async create(teamId: number, userId: number, body: FeatureFlagCreateBody) {
      const filters = (body.filters ?? { groups: [] }) as FlagFilters;
      const encrypted = body.has_encrypted_payloads ?? false;
      return writeFlags(teamId, async (tx) => {
        await checkKeyFree(tx, teamId, body.key);
        await checkFilters(tx, teamId, filters);
        const row = await tx.featureFlag.create({
          data: {
            teamId,
            key: body.key,
            name: body.name ?? '',
            filters: sealFilters(filters, encrypted, payloadKey, teamId) as Prisma.InputJsonValue,
            active: body.active ?? true,
            ensureExperienceContinuity: body.ensure_experience_continuity ?? false,
            isRemoteConfiguration: body.is_remote_configuration ?? false,
            hasEncryptedPayloads: encrypted,
            createdById: userId,
          },
        });
        return withCreator(tx, row.id);
      });
    },

    async update(teamId: number, id: number, body: FeatureFlagUpdateBody) {
      return writeFlags(teamId, async (tx) => {
        const flag = await findLive(tx, teamId, id);
        if (body.deleted === true) await checkNotInUse(tx, id);
        if (body.key !== undefined && body.key !== flag.key) await checkKeyFree(tx, teamId, body.key, id);
        const encrypted = body.has_encrypted_payloads ?? flag.hasEncryptedPayloads;
        let filters = body.filters as FlagFilters | undefined;
        if (filters) await checkFilters(tx, teamId, filters, id);
        // Stored filters are rewritten in the clear first: payloads are (re)encrypted below.
        if (filters === undefined && encrypted !== flag.hasEncryptedPayloads)
          filters = openFilters(flag, payloadKey, true);
        if (body.key !== undefined && body.key !== flag.key)
          filters = renameEnrollment(filters ?? openFilters(flag, payloadKey, true), body.key);
        await tx.featureFlag.update({
          where: { id },
          data: {
            ...(body.key !== undefined ? { key: body.key } : {}),
            ...(body.name !== undefined ? { name: body.name } : {}),
            ...(filters !== undefined
              ? { filters: sealFilters(filters, encrypted, payloadKey, teamId) as Prisma.InputJsonValue }
              : {}),
            ...(body.is_remote_configuration !== undefined
              ? { isRemoteConfiguration: body.is_remote_configuration }
              : {}),
            hasEncryptedPayloads: encrypted,
            ...(body.active !== undefined ? { active: body.active } : {}),
            ...(body.ensure_experience_continuity !== undefined
              ? { ensureExperienceContinuity: body.ensure_experience_continuity }
              : {}),
            ...(body.deleted !== undefined ? { deleted: body.deleted } : {}),
            version: { increment: 1 },
          },
        });
        return withCreator(tx, id);
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

export interface FlagListFilters {
  search?: string;
  active?: boolean;
  type?: 'boolean' | 'multivariant' | 'experiment' | 'remote_config';
}
