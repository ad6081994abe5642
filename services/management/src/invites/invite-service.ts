// Invites, as PostHog has them: an organization admin invites an email at a level up to their own;
// the invite's id is the secret of the link the invited person opens (the console's
// `#/signup/<id>`), valid INVITE_DAYS days and once. Accepting it creates the account with the
// password the person chooses and the membership, in one transaction, and signs them in.
import type { Prisma, PrismaClient } from '@sett/db';
import { ForbiddenError, ValidationError } from '@sett/http';
import { generateKeyId, hashPassword } from '@sett/keys';
import { ADMIN_LEVEL, MEMBER_LEVEL } from '../organizations/levels';
import { userBasicJson } from '../users/user-basic';
import { withPasswordHashing } from '../users/user-credentials';
import { isUuid } from '../validate';

export const INVITE_DAYS = 3;
const INVITE_MS = INVITE_DAYS * 86_400_000;

const include = { createdBy: true } as const;
type InviteRow = Prisma.OrganizationInviteGetPayload<{ include: typeof include }>;

export interface InviteCreate {
  target_email: string;
  first_name?: string;
  level?: number;
  message?: string | null;
}

const isExpired = (i: { createdAt: Date }, now = Date.now()) => now - i.createdAt.getTime() > INVITE_MS;

export function inviteJson(i: InviteRow) {
  return {
    id: i.id,
    target_email: i.targetEmail,
    first_name: i.firstName,
    emailing_attempt_made: false,
    level: i.level,
    is_expired: isExpired(i),
    created_by: userBasicJson(i.createdBy),
    created_at: i.createdAt.toISOString(),
    updated_at: i.updatedAt.toISOString(),
    message: i.message,
    private_project_access: [],
  };
}

const INVALID = () =>
  new ValidationError('The provided invite ID is not valid.', 'invite_id', 'invalid_input');

/** The caller's membership of the organization, as the route resolved it (membershipOf). */
export interface Membership {
  id: string;
  level: number;
}

function requireAdmin(org: Membership): void {
  if (org.level < ADMIN_LEVEL)
    throw new ForbiddenError('Only organization admins and owners can manage invites.');
}

export function createInviteService(prisma: PrismaClient) {
  /** An open invite by its id (the link), or 400 as PostHog answers for any bad id. */
  async function open(inviteId: string) {
    if (!isUuid(inviteId)) throw INVALID();
    const invite = await prisma.organizationInvite.findUnique({
      where: { id: inviteId.toLowerCase() },
      include: { organization: { select: { id: true, name: true } } },
    });
    if (!invite || invite.acceptedAt) throw INVALID();
    if (isExpired(invite))
      throw new ValidationError('This invite has expired: ask for a new one.', 'invite_id', 'expired');
    return invite;
  }

  return {
    async list(org: Membership) {
      requireAdmin(org);
      const rows = await prisma.organizationInvite.findMany({
        where: { organizationId: org.id, acceptedAt: null },
        include,
        orderBy: [{ createdAt: 'desc' }, { id: 'asc' }],
        take: 500,
      });
      return rows.map(inviteJson);
    },

    async create(org: Membership, userId: number, body: InviteCreate) {
      requireAdmin(org);
      const organizationId = org.id;
      const level = body.level ?? MEMBER_LEVEL;
      if (level > org.level)
        throw new ForbiddenError('You can only invite members with a level lower or equal to yours.');
      const email = body.target_email.trim().toLowerCase();
      const member = await prisma.organizationMembership.findFirst({
        where: { organizationId, user: { email: { equals: email, mode: 'insensitive' } } },
      });
      if (member)
        throw new ValidationError(
          'This user is already a member of the organization.',
          'target_email',
          'unique',
        );
      // A new invite for the same email replaces an open one (a fresh link, a fresh expiry).
      const invite = await prisma.$transaction(async (tx) => {
        await tx.organizationInvite.deleteMany({
          where: { organizationId, acceptedAt: null, targetEmail: { equals: email, mode: 'insensitive' } },
        });
        return tx.organizationInvite.create({
          data: {
            organizationId,
            targetEmail: email,
            firstName: body.first_name?.trim() ?? '',
            level,
            message: body.message ?? null,
            createdById: userId,
          },
          include,
        });
      });
      return inviteJson(invite);
    },

    async remove(org: Membership, inviteId: string) {
      requireAdmin(org);
      if (!isUuid(inviteId)) throw INVALID();
      await prisma.organizationInvite.deleteMany({
        where: { id: inviteId.toLowerCase(), organizationId: org.id },
      });
    },

    /** What the link shows before sign-up (no credentials: the id is the secret). */
    async preview(inviteId: string) {
      const invite = await open(inviteId);
      return {
        id: invite.id,
        target_email: invite.targetEmail,
        first_name: invite.firstName,
        organization_name: invite.organization.name,
      };
    },

    /** Creates the account and its membership; answers the new user's id. */
    async accept(
      inviteId: string,
      body: { first_name?: string; password: string },
    ): Promise<{ userId: number; uuid: string; email: string; organizationId: string }> {
      const invite = await open(inviteId);
      const exists = await prisma.user.findFirst({
        where: { email: { equals: invite.targetEmail, mode: 'insensitive' } },
      });
      if (exists)
        throw new ValidationError(
          'An account with this email exists already: sign in, and an admin adds it to the organization.',
          'target_email',
          'account_exists',
        );
      const password = await withPasswordHashing(() => hashPassword(body.password));
      return prisma.$transaction(async (tx) => {
        // Once: the first acceptance marks it, a concurrent second finds it taken.
        const taken = await tx.organizationInvite.updateMany({
          where: { id: invite.id, acceptedAt: null },
          data: { acceptedAt: new Date() },
        });
        if (taken.count === 0) throw INVALID();
        const team = await tx.team.findFirst({
          where: { organizationId: invite.organizationId, deletedAt: null },
          orderBy: { id: 'asc' },
        });
        const user = await tx.user.create({
          data: {
            email: invite.targetEmail,
            distinctId: generateKeyId(),
            firstName: body.first_name?.trim() || invite.firstName,
            password,
            isEmailVerified: true,
            currentOrganizationId: invite.organizationId,
            currentTeamId: team?.id ?? null,
          },
        });
        await tx.organizationMembership.create({
          data: { organizationId: invite.organizationId, userId: user.id, level: invite.level },
        });
        return { userId: user.id, uuid: user.uuid, email: user.email, organizationId: invite.organizationId };
      });
    },
  };
}

export type InviteService = ReturnType<typeof createInviteService>;
