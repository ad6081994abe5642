// Organization members (PostHog's /api/organizations/:id/members/, keyed by the user's uuid):
// any member lists them; admins add existing users by e-mail, change levels and remove members;
// a member may leave. Owners are protected: only owners change or remove an owner or make
// someone owner, nobody changes their own level, and the last owner can neither leave nor be
// demoted. Level changes and removals run under a row lock on the organization, re-reading both
// levels, so two owners demoting each other at once cannot leave it without an owner. Removing a
// member never deletes the user's account.
import type { OrganizationMembership, PrismaClient, User } from '@sett/db';
import type { Prisma } from '@sett/db';
import { ConflictError, ForbiddenError, NotFoundError, ValidationError } from '@sett/http';
import { toDatabaseSettError } from '../database-errors';
import {
  ADMIN_LEVEL,
  MEMBER_LEVEL,
  OWNER_LEVEL,
  lockOrganizations,
  soleOwnerOf,
} from '../organizations/levels';
import type { MemberCreate } from '../organizations/organization-schemas';
import type { Page } from '../pagination/pagination';
import { isUuid } from '../validate';

type MemberRow = OrganizationMembership & { user: User };

/** PostHog's OrganizationMemberSerializer, with UserBasicSerializer for `user`. */
export function memberJson(m: MemberRow) {
  return {
    id: m.id,
    user: {
      id: m.user.id,
      uuid: m.user.uuid,
      distinct_id: m.user.distinctId,
      first_name: m.user.firstName,
      last_name: m.user.lastName,
      email: m.user.email,
      is_email_verified: m.user.isEmailVerified,
      hedgehog_config: m.user.hedgehogConfig ?? null,
      role_at_organization: m.user.roleAtOrganization,
    },
    level: m.level,
    joined_at: m.joinedAt.toISOString(),
    updated_at: m.updatedAt.toISOString(),
    is_2fa_enabled: m.user.totpEnabled,
    has_social_auth: false,
    last_login: null,
  };
}

export function createMemberService(prisma: PrismaClient) {
  /** The member a path names (user uuid or @me) in the organization; 404 when not a member. */
  async function target(
    tx: Prisma.TransactionClient,
    organizationId: string,
    requesterId: number,
    userParam: string,
  ): Promise<MemberRow> {
    const where =
      userParam === '@me'
        ? { organizationId, userId: requesterId }
        : isUuid(userParam)
          ? { organizationId, user: { uuid: userParam.toLowerCase() } }
          : undefined;
    const m = where ? await tx.organizationMembership.findFirst({ where, include: { user: true } }) : null;
    if (!m) throw new NotFoundError('Member not found.');
    return m;
  }

  /** The requester's level now, under the organization's lock; 404 if no longer a member. */
  async function requesterLevel(tx: Prisma.TransactionClient, organizationId: string, userId: number) {
    const m = await tx.organizationMembership.findUnique({
      where: { organizationId_userId: { organizationId, userId } },
      select: { level: true },
    });
    if (!m) throw new NotFoundError('Organization not found.');
    return m.level;
  }

  /** PostHog's validate_update: may a requester at `mine` edit a member at `theirs`? */
  function checkEditOther(mine: number, theirs: number): void {
    if (mine < ADMIN_LEVEL) throw new ForbiddenError('You can only edit others if you are an admin.');
    if (theirs > mine) throw new ForbiddenError('You can only edit others with level lower or equal to you.');
  }

  /** Points a user who left the organization at another of theirs (or at none). */
  async function moveCurrentAway(tx: Prisma.TransactionClient, userId: number, organizationId: string) {
    const user = await tx.user.findUnique({ where: { id: userId }, select: { currentOrganizationId: true } });
    if (user?.currentOrganizationId !== organizationId) return;
    const other = await tx.organizationMembership.findFirst({
      where: { userId },
      orderBy: [{ joinedAt: 'asc' }, { id: 'asc' }],
    });
    const team = other
      ? await tx.team.findFirst({
          where: { organizationId: other.organizationId, deletedAt: null },
          orderBy: { id: 'asc' },
        })
      : null;
    await tx.user.update({
      where: { id: userId },
      data: { currentOrganizationId: other?.organizationId ?? null, currentTeamId: team?.id ?? null },
    });
  }

  return {
    /** PostHog's order: level ascending, newest first within a level. */
    async list(organizationId: string, page: Page) {
      const where = { organizationId };
      const [count, rows] = await Promise.all([
        prisma.organizationMembership.count({ where }),
        prisma.organizationMembership.findMany({
          where,
          include: { user: true },
          orderBy: [{ level: 'asc' }, { joinedAt: 'desc' }, { id: 'asc' }],
          skip: page.offset,
          take: page.limit,
        }),
      ]);
      return { count, results: rows.map(memberJson) };
    },

    async retrieve(organizationId: string, requesterId: number, userParam: string) {
      return memberJson(await target(prisma, organizationId, requesterId, userParam));
    },

    /** An existing user joins at `level` (default member); only up to the requester's own level. */
    async add(organizationId: string, requesterId: number, input: MemberCreate) {
      const level = input.level ?? MEMBER_LEVEL;
      const mine = await requesterLevel(prisma, organizationId, requesterId);
      if (mine < ADMIN_LEVEL) throw new ForbiddenError('You can only add members if you are an admin.');
      if (level > mine)
        throw new ForbiddenError('You can only add members with a level lower or equal to yours.');
      const user = await prisma.user.findFirst({
        where: { email: { equals: input.email.trim(), mode: 'insensitive' }, isActive: true },
      });
      if (!user)
        throw new ValidationError('There is no user with this email address.', 'email', 'does_not_exist');
      const existing = await prisma.organizationMembership.findUnique({
        where: { organizationId_userId: { organizationId, userId: user.id } },
      });
      if (existing)
        throw new ValidationError('This user is already a member of the organization.', 'email', 'unique');
      // A concurrent add of the same user passed the check above too: the unique index decides,
      // and the loser gets the same answer as a sequential duplicate.
      const m = await prisma.organizationMembership
        .create({ data: { organizationId, userId: user.id, level }, include: { user: true } })
        .catch((err: unknown) => {
          if (toDatabaseSettError(err) instanceof ConflictError)
            throw new ValidationError(
              'This user is already a member of the organization.',
              'email',
              'unique',
            );
          throw err;
        });
      if (!user.currentOrganizationId) {
        const team = await prisma.team.findFirst({
          where: { organizationId, deletedAt: null },
          orderBy: { id: 'asc' },
        });
        await prisma.user.update({
          where: { id: user.id },
          data: { currentOrganizationId: organizationId, currentTeamId: team?.id ?? null },
        });
      }
      return memberJson(m);
    },

    async updateLevel(organizationId: string, requesterId: number, userParam: string, level: number) {
      return prisma.$transaction(async (tx) => {
        await lockOrganizations(tx, [organizationId]);
        const mine = await requesterLevel(tx, organizationId, requesterId);
        const m = await target(tx, organizationId, requesterId, userParam);
        if (m.userId === requesterId) throw new ForbiddenError("You can't change your own access level.");
        checkEditOther(mine, m.level);
        if (level > mine)
          throw new ForbiddenError(
            'You can only change access level of others to lower or equal to your current one.',
          );
        if (m.level === OWNER_LEVEL && level < OWNER_LEVEL)
          await refuseLastOwner(tx, m.userId, organizationId);
        const updated = await tx.organizationMembership.update({
          where: { id: m.id },
          data: { level },
          include: { user: true },
        });
        return memberJson(updated);
      });
    },

    /** Removes the membership (not the user). Leaving is always allowed, except for the last owner. */
    async remove(organizationId: string, requesterId: number, userParam: string) {
      await prisma.$transaction(async (tx) => {
        await lockOrganizations(tx, [organizationId]);
        const mine = await requesterLevel(tx, organizationId, requesterId);
        const m = await target(tx, organizationId, requesterId, userParam);
        if (m.userId !== requesterId) checkEditOther(mine, m.level);
        if (m.level === OWNER_LEVEL) await refuseLastOwner(tx, m.userId, organizationId);
        await tx.organizationMembership.delete({ where: { id: m.id } });
        await moveCurrentAway(tx, m.userId, organizationId);
      });
    },
  };
}

async function refuseLastOwner(tx: Prisma.TransactionClient, userId: number, organizationId: string) {
  if ((await soleOwnerOf(tx, userId, [organizationId])).length > 0)
    throw new ValidationError(
      'An organization must keep at least one owner: make another member owner first.',
      null,
      'last_owner',
    );
}

export type MemberService = ReturnType<typeof createMemberService>;
