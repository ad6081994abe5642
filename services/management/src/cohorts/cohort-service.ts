// Cohorts of a project (PostHog's shape) and the members of static cohorts.
// Every write runs in one transaction holding the project's definition lock (the flag lock:
// flags check their cohort references under it, cohort deletions check the flags): change the
// rows (version + 1), read back every live cohort and rewrite the project's cohort list in
// Redis before commit (writeCohortList also tells decide on the flags-changed channel). Redis
// down → 503 and nothing saved, as for flags.
// Static membership is by DISTINCT ID (cohort_members): decide matches any distinct id of the
// person, and members may be added before the person is first seen. Members are written in
// statements of MEMBER_BATCH rows (INSERT ... SELECT unnest(...) ON CONFLICT DO NOTHING), and
// `count` moves by the rows actually inserted or deleted, in the same transaction.
import type { Cohort, Prisma, PrismaClient, User } from '@sett/db';
import { writeCohortList, type Redis } from '@sett/cache';
import { cohortTreeRegexPatterns, type RegexChecker } from '@sett/flags';
import { NotFoundError, ServiceUnavailableError, ValidationError } from '@sett/http';
import type { Logger } from '@sett/logger';
import { lockProjectDefinitions, type Tx } from '../feature-flags/feature-flag-service';
import type { Page } from '../pagination/pagination';
import {
  behaviouralDependency,
  checkCohortFilters,
  cohortClosure,
  emptyCohortFilters,
  flagReferences,
  hasCriteria,
  hasCycle,
  summariseStored,
  type CohortDefinitionRow,
} from './cohort-filters';
import type { CohortCreateBody, CohortUpdateBody } from './cohort-schemas';

/** Rows per INSERT/DELETE statement of members. */
export const MEMBER_BATCH = 10_000;
/** Transactions that write members may take longer than the default 15 s (a 50 MB CSV). */
const MEMBER_WRITE_TIMEOUT_MS = 300_000;

type Creator = Pick<User, 'id' | 'uuid' | 'distinctId' | 'firstName' | 'lastName' | 'email'>;
const creatorSelect = {
  id: true,
  uuid: true,
  distinctId: true,
  firstName: true,
  lastName: true,
  email: true,
} as const;

/** What decide reads from Redis for each live cohort (the contract with the evaluation side). */
export interface CohortDefinition {
  id: number;
  name: string;
  filters: unknown;
  is_static: boolean;
  version: number;
}

export const toCohortDefinition = (c: Cohort): CohortDefinition => ({
  id: c.id,
  name: c.name,
  filters: c.filters,
  is_static: c.isStatic,
  version: c.version,
});

/** PostHog's cohort shape (fields Sett has no use for carry PostHog's neutral values). */
export function cohortJson(c: Cohort, creator: Creator | null | undefined) {
  return {
    id: c.id,
    name: c.name,
    description: c.description,
    groups: [],
    deleted: c.deleted,
    filters: c.filters,
    query: null,
    version: c.version,
    pending_version: null,
    is_calculating: false,
    created_by: creator
      ? {
          id: creator.id,
          uuid: creator.uuid,
          distinct_id: creator.distinctId,
          first_name: creator.firstName,
          last_name: creator.lastName,
          email: creator.email,
        }
      : null,
    created_at: c.createdAt.toISOString(),
    last_calculation: c.updatedAt.toISOString(),
    errors_calculating: 0,
    count: c.count,
    is_static: c.isStatic,
  };
}

export type CohortJson = ReturnType<typeof cohortJson>;

const invalidRef = (): never => {
  throw new ValidationError('Invalid Cohort ID in filter', 'filters', 'invalid_input');
};

export function createCohortService({
  prisma,
  redis,
  logger,
  regexes,
}: {
  prisma: PrismaClient;
  redis: Redis;
  logger: Logger;
  /** Settles new patterns within the request's budget, large ones off the event loop. */
  regexes: RegexChecker;
}) {
  async function withCreators(db: Tx | PrismaClient, rows: Cohort[]) {
    const ids = [...new Set(rows.map((r) => r.createdById).filter((id): id is number => id !== null))];
    const users = ids.length
      ? await db.user.findMany({ where: { id: { in: ids } }, select: creatorSelect })
      : [];
    const byId = new Map(users.map((u) => [u.id, u]));
    return rows.map((r) => cohortJson(r, r.createdById === null ? null : byId.get(r.createdById)));
  }

  /** Runs `fn` under the project lock, then rewrites the project's cohort list before commit. */
  function writeCohorts<T>(teamId: number, fn: (tx: Tx) => Promise<T>, timeout = 15_000): Promise<T> {
    return prisma.$transaction(
      async (tx) => {
        await lockProjectDefinitions(tx, teamId);
        const out = await fn(tx);
        const cohorts = await tx.cohort.findMany({
          where: { teamId, deleted: false },
          orderBy: { id: 'asc' },
        });
        try {
          await writeCohortList(redis, {
            teamId,
            updatedAt: Date.now(),
            cohorts: cohorts.map(toCohortDefinition),
          });
        } catch (err) {
          logger.warn('cohort list not written to redis; rolling back', {
            teamId,
            err: (err as Error).message,
          });
          throw new ServiceUnavailableError(
            'The flag cache is unavailable; the change was not saved. Retry later.',
          );
        }
        return out;
      },
      { timeout, maxWait: 10_000 },
    );
  }

  async function liveCohorts(tx: Tx, teamId: number): Promise<Map<number, CohortDefinitionRow>> {
    const rows = await tx.cohort.findMany({
      where: { teamId, deleted: false },
      select: { id: true, name: true, isStatic: true, filters: true },
    });
    return new Map(rows.map((r) => [r.id, r]));
  }

  async function findLive(tx: Tx | PrismaClient, teamId: number, id: number) {
    const cohort = await tx.cohort.findFirst({ where: { id, teamId, deleted: false } });
    if (!cohort) throw new NotFoundError();
    return cohort;
  }

  /** Cohort ids that active flags of the project depend on, directly or through cohorts. */
  async function usedByActiveFlags(tx: Tx, teamId: number, cohorts: Map<number, CohortDefinitionRow>) {
    const flags = await tx.featureFlag.findMany({
      where: { teamId, deleted: false, active: true },
      select: { id: true, key: true, name: true, filters: true },
    });
    const direct = new Map<number, Array<{ key: string; name: string }>>();
    for (const f of flags)
      for (const ref of flagReferences((f.filters ?? {}) as never).cohorts) {
        if (!direct.has(ref.id)) direct.set(ref.id, []);
        direct.get(ref.id)!.push({ key: f.key, name: f.name });
      }
    return { direct, all: cohortClosure(direct.keys(), cohorts) };
  }

  /** Filters as they will be stored, checked against the project (references, cycles, flags). */
  async function checkFilters(
    tx: Tx,
    teamId: number,
    filters: Record<string, unknown>,
    isStatic: boolean,
    selfId?: number,
  ) {
    if (isStatic && hasCriteria(filters))
      throw new ValidationError(
        'A static cohort holds a list of distinct ids, not criteria: leave filters empty.',
        'filters',
        'invalid_input',
      );
    // New patterns are settled within the request's budget before the filters are checked, so a
    // cohort with many does not stall other requests.
    const tooCostly = await regexes.prepare(cohortTreeRegexPatterns(filters.properties));
    if (tooCostly) throw new ValidationError(`filters: ${tooCostly}.`, 'filters', 'invalid_input');
    const summary = checkCohortFilters(filters);
    if (summary.cohortIds.size === 0) return;
    const cohorts = await liveCohorts(tx, teamId);
    for (const id of summary.cohortIds) if (!cohorts.has(id)) invalidRef();
    if (selfId === undefined) return;
    const refsOf = (id: number) =>
      id === selfId ? summary.cohortIds : summariseStored(cohorts.get(id)?.filters).cohortIds;
    if (hasCycle(selfId, refsOf))
      throw new ValidationError(
        'Cohorts cannot reference other cohorts in a loop.',
        'filters',
        'invalid_input',
      );
  }

  /** PostHog refuses event criteria in a cohort that active flags use (the flag could not be evaluated). */
  async function checkFlagUse(tx: Tx, teamId: number, selfId: number, filters: unknown) {
    const cohorts = await liveCohorts(tx, teamId);
    const { all } = await usedByActiveFlags(tx, teamId, cohorts);
    if (!all.has(selfId)) return;
    const found = behaviouralDependency([selfId], cohorts, new Map([[selfId, filters]]));
    if (!found) return;
    throw new ValidationError(
      found.id === selfId
        ? 'Behavioral filters cannot be added to cohorts used in feature flags.'
        : `A cohort dependency (${found.name}) has filters based on events. These cohorts can't be used in feature flags.`,
      'filters',
      'behavioral_cohort_found',
    );
  }

  /** PostHog refuses deleting a cohort that active flags or other cohorts use. */
  async function checkNotInUse(tx: Tx, teamId: number, id: number) {
    const cohorts = await liveCohorts(tx, teamId);
    const { direct } = await usedByActiveFlags(tx, teamId, cohorts);
    const flags = direct.get(id);
    if (flags?.length)
      throw new ValidationError(
        `This cohort is used in ${flags.length} active feature flag(s): ${flags
          .slice(0, 5)
          .map((f) => f.name || f.key)
          .join(', ')}. Please remove the cohort from these feature flags before deleting it.`,
        'deleted',
        'in_use',
      );
    const users = [...cohorts.values()].filter(
      (c) => c.id !== id && summariseStored(c.filters).cohortIds.includes(id),
    );
    if (users.length)
      throw new ValidationError(
        `This cohort is used as criteria in ${users.length} other cohort(s): ${users
          .slice(0, 5)
          .map((c) => c.name || 'Unnamed')
          .join(', ')}. Please remove this cohort from those cohort definitions before deleting it.`,
        'deleted',
        'in_use',
      );
  }

  async function insertMembers(tx: Tx, cohort: Cohort, ids: readonly string[]): Promise<number> {
    let added = 0;
    for (let i = 0; i < ids.length; i += MEMBER_BATCH) {
      const batch = ids.slice(i, i + MEMBER_BATCH);
      // One JSON text parameter: Prisma serialises a text[] parameter of 10k values slowly.
      added += await tx.$executeRaw`INSERT INTO cohort_members (cohort_id, team_id, distinct_id)
        SELECT ${cohort.id}::int, ${cohort.teamId}::int, jsonb_array_elements_text(${JSON.stringify(batch)}::jsonb)
        ON CONFLICT DO NOTHING`;
    }
    return added;
  }

  async function deleteMembers(tx: Tx, cohort: Cohort, ids: readonly string[]): Promise<number> {
    let removed = 0;
    for (let i = 0; i < ids.length; i += MEMBER_BATCH) {
      const batch = ids.slice(i, i + MEMBER_BATCH);
      removed += await tx.$executeRaw`DELETE FROM cohort_members
        WHERE cohort_id = ${cohort.id}::int
          AND distinct_id IN (SELECT jsonb_array_elements_text(${JSON.stringify(batch)}::jsonb))`;
    }
    return removed;
  }

  /** Applies a membership change, keeps count right and bumps the version (decide's caches key on it). */
  async function changeMembers(tx: Tx, cohort: Cohort, add: readonly string[], remove: readonly string[]) {
    const delta =
      (add.length ? await insertMembers(tx, cohort, add) : 0) -
      (remove.length ? await deleteMembers(tx, cohort, remove) : 0);
    await tx.$executeRaw`UPDATE cohorts SET count = COALESCE(count, 0) + ${delta}::int, version = version + 1,
      updated_at = now() WHERE id = ${cohort.id}::int`;
  }

  const staticOnly = (cohort: Cohort, attr: string | null, action: string) => {
    if (!cohort.isStatic)
      throw new ValidationError(`Can only ${action} static cohorts`, attr, 'invalid_input');
  };

  const reload = async (tx: Tx, id: number) =>
    (await withCreators(tx, [await tx.cohort.findUniqueOrThrow({ where: { id } })]))[0]!;

  return {
    writeCohorts,

    /** Newest first; `search`: case-insensitive text the name contains (PostHog's filter). */
    async list(teamId: number, page: Page, search?: string) {
      const where: Prisma.CohortWhereInput = {
        teamId,
        deleted: false,
        ...(search ? { name: { contains: search, mode: 'insensitive' } } : {}),
      };
      const [count, rows] = await Promise.all([
        prisma.cohort.count({ where }),
        prisma.cohort.findMany({ where, orderBy: { id: 'desc' }, skip: page.offset, take: page.limit }),
      ]);
      return { count, results: await withCreators(prisma, rows) };
    },

    async retrieve(teamId: number, id: number) {
      return (await withCreators(prisma, [await findLive(prisma, teamId, id)]))[0]!;
    },

    /** `members`: distinct ids of a CSV upload (static cohorts only). */
    async create(teamId: number, userId: number, body: CohortCreateBody, members?: string[]) {
      const isStatic = body.is_static ?? false;
      if (members && !isStatic)
        throw new ValidationError('A CSV of members is only for static cohorts (is_static: true).', 'csv');
      const filters = (body.filters ?? emptyCohortFilters()) as Record<string, unknown>;
      if (filters.properties === undefined) filters.properties = emptyCohortFilters().properties;
      return writeCohorts(
        teamId,
        async (tx) => {
          await checkFilters(tx, teamId, filters, isStatic);
          const row = await tx.cohort.create({
            data: {
              teamId,
              name: body.name,
              description: body.description ?? '',
              filters: filters as Prisma.InputJsonValue,
              isStatic,
              count: isStatic ? 0 : null,
              createdById: userId,
            },
          });
          // A new cohort starts at version 1 whatever its first members.
          if (members?.length) {
            const added = await insertMembers(tx, row, members);
            await tx.cohort.update({ where: { id: row.id }, data: { count: added } });
          }
          return reload(tx, row.id);
        },
        members ? MEMBER_WRITE_TIMEOUT_MS : undefined,
      );
    },

    async update(teamId: number, id: number, body: CohortUpdateBody, members?: string[]) {
      return writeCohorts(
        teamId,
        async (tx) => {
          const cohort = await findLive(tx, teamId, id);
          if (body.is_static !== undefined && body.is_static !== cohort.isStatic)
            throw new ValidationError(
              'A cohort cannot change between static and dynamic: create a new cohort.',
              'is_static',
            );
          if (members) staticOnly(cohort, 'csv', 'upload a CSV to');
          const filters = body.filters as Record<string, unknown> | undefined;
          if (filters) {
            if (filters.properties === undefined) filters.properties = emptyCohortFilters().properties;
            await checkFilters(tx, teamId, filters, cohort.isStatic, id);
            if (!cohort.isStatic) await checkFlagUse(tx, teamId, id, filters);
          }
          if (body.deleted === true) await checkNotInUse(tx, teamId, id);
          await tx.cohort.update({
            where: { id },
            data: {
              ...(body.name !== undefined ? { name: body.name } : {}),
              ...(body.description !== undefined ? { description: body.description } : {}),
              ...(filters !== undefined ? { filters: filters as Prisma.InputJsonValue } : {}),
              ...(body.deleted !== undefined ? { deleted: body.deleted } : {}),
              version: { increment: 1 },
            },
          });
          if (members?.length && body.deleted !== true) await changeMembers(tx, cohort, members, []);
          return reload(tx, id);
        },
        members ? MEMBER_WRITE_TIMEOUT_MS : undefined,
      );
    },

    /** Soft delete (PATCH {deleted: true} does the same). Members stay, as PostHog keeps them. */
    async remove(teamId: number, id: number) {
      await writeCohorts(teamId, async (tx) => {
        await findLive(tx, teamId, id);
        await checkNotInUse(tx, teamId, id);
        await tx.cohort.update({ where: { id }, data: { deleted: true, version: { increment: 1 } } });
      });
    },

    async addMembers(teamId: number, id: number, distinctIds: readonly string[]) {
      return writeCohorts(
        teamId,
        async (tx) => {
          const cohort = await findLive(tx, teamId, id);
          staticOnly(cohort, null, 'add users to');
          await changeMembers(tx, cohort, [...new Set(distinctIds)], []);
          return reload(tx, id);
        },
        MEMBER_WRITE_TIMEOUT_MS,
      );
    },

    async removeMembers(teamId: number, id: number, distinctIds: readonly string[]) {
      return writeCohorts(
        teamId,
        async (tx) => {
          const cohort = await findLive(tx, teamId, id);
          staticOnly(cohort, null, 'remove users from');
          await changeMembers(tx, cohort, [], [...new Set(distinctIds)]);
          return reload(tx, id);
        },
        MEMBER_WRITE_TIMEOUT_MS,
      );
    },

    /** Members of a static cohort, by distinct id (keyset order), for checks and exports. */
    async members(teamId: number, id: number, page: Page) {
      const cohort = await findLive(prisma, teamId, id);
      staticOnly(cohort, null, 'list the members of');
      const rows = await prisma.cohortMember.findMany({
        where: { cohortId: id },
        orderBy: { distinctId: 'asc' },
        skip: page.offset,
        take: page.limit,
        select: { distinctId: true },
      });
      return { count: cohort.count ?? 0, results: rows.map((r) => ({ distinct_id: r.distinctId })) };
    },
  };
}

export type CohortService = ReturnType<typeof createCohortService>;
