// Organizations: the caller's list, create (the creator becomes owner; a first project is made
// as PostHog's bootstrap does, and becomes the creator's current one), read, PATCH (admins)
// and DELETE (owners). Membership decides visibility, also for staff: another organization's id
// is 404 and its existence is never confirmed. Every write re-reads the caller's level.
import { randomBytes } from 'node:crypto';
import type { Organization, PrismaClient, Team } from '@sett/db';
import { ForbiddenError, NotFoundError, ValidationError } from '@sett/http';
import { generateProjectToken } from '@sett/keys';
import type { Page } from '../pagination/pagination';
import { organizationJson } from '../projects/project-views';
import { isUuid } from '../validate';
import { ADMIN_LEVEL, OWNER_LEVEL } from './levels';
import type { OrganizationCreate, OrganizationUpdate } from './organization-schemas';

export const CURRENT_ORGANIZATION = '@current';
const DEFAULT_PROJECT_NAME = 'Default project';

type OrganizationWithTeams = Organization & { teams: Team[]; _count: { memberships: number } };

const withTeams = {
  teams: { where: { deletedAt: null }, orderBy: { id: 'asc' } },
  _count: { select: { memberships: true } },
} as const;

function slugOf(name: string): string {
  const base = name
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 40);
  // Names are not unique: the slug gets a random suffix, so no organization is ever found by name.
  return `${base || 'org'}-${randomBytes(4).toString('hex')}`;
}

export function createOrganizationService(prisma: PrismaClient) {
  /** The caller's level in the organization a path names (uuid or @current); 404 when not a member. */
  async function membershipOf(userId: number, idParam: string): Promise<{ id: string; level: number }> {
    let id: string | undefined;
    if (idParam === CURRENT_ORGANIZATION) {
      const user = await prisma.user.findUnique({
        where: { id: userId },
        select: { currentOrganizationId: true },
      });
      id = user?.currentOrganizationId ?? undefined;
      if (!id) {
        // As PostHog: no current organization set, the first one the user joined.
        const first = await prisma.organizationMembership.findFirst({
          where: { userId },
          orderBy: [{ joinedAt: 'asc' }, { id: 'asc' }],
        });
        id = first?.organizationId;
      }
    } else if (isUuid(idParam)) id = idParam.toLowerCase();
    const m = id
      ? await prisma.organizationMembership.findUnique({
          where: { organizationId_userId: { organizationId: id, userId } },
          select: { level: true },
        })
      : null;
    if (!id || !m) throw new NotFoundError('Organization not found.');
    return { id, level: m.level };
  }

  function json(o: OrganizationWithTeams, level: number | null) {
    return organizationJson(o, o.teams, level, o._count.memberships);
  }

  async function load(id: string, level: number) {
    const o = await prisma.organization.findUnique({ where: { id }, include: withTeams });
    if (!o) throw new NotFoundError('Organization not found.');
    return json(o, level);
  }

  return {
    membershipOf,

    /** `within`: the organizations the key is limited to (key-scoping.ts); undefined: all. */
    async list(userId: number, page: Page, within?: string[]) {
      const where = { memberships: { some: { userId } }, ...(within ? { id: { in: within } } : {}) };
      const [count, orgs, levels] = await Promise.all([
        prisma.organization.count({ where }),
        prisma.organization.findMany({
          where,
          include: withTeams,
          orderBy: [{ createdAt: 'asc' }, { id: 'asc' }],
          skip: page.offset,
          take: page.limit,
        }),
        prisma.organizationMembership.findMany({
          where: { userId },
          select: { organizationId: true, level: true },
        }),
      ]);
      const levelOf = new Map(levels.map((m) => [m.organizationId, m.level]));
      return { count, results: orgs.map((o) => json(o, levelOf.get(o.id) ?? null)) };
    },

    async retrieve(userId: number, idParam: string) {
      const m = await membershipOf(userId, idParam);
      return load(m.id, m.level);
    },

    /** The creator becomes owner and moves to the new organization and its first project. */
    async create(userId: number, input: OrganizationCreate) {
      const created = await prisma.$transaction(async (tx) => {
        const org = await tx.organization.create({ data: { name: input.name, slug: slugOf(input.name) } });
        await tx.organizationMembership.create({
          data: { organizationId: org.id, userId, level: OWNER_LEVEL },
        });
        const team = await tx.team.create({
          data: { organizationId: org.id, name: DEFAULT_PROJECT_NAME, apiToken: generateProjectToken() },
        });
        await tx.user.update({
          where: { id: userId },
          data: { currentOrganizationId: org.id, currentTeamId: team.id },
        });
        return org;
      });
      return load(created.id, OWNER_LEVEL);
    },

    async update(userId: number, idParam: string, input: OrganizationUpdate) {
      const m = await membershipOf(userId, idParam);
      if (m.level < ADMIN_LEVEL) throw new ForbiddenError('Your organization access level is insufficient.');
      await prisma.organization.update({
        where: { id: m.id },
        data: {
          ...(input.name !== undefined ? { name: input.name } : {}),
          ...(input.is_member_join_email_enabled !== undefined
            ? { isMemberJoinEmailEnabled: input.is_member_join_email_enabled }
            : {}),
          ...(input.enforce_2fa !== undefined ? { enforce2fa: input.enforce_2fa } : {}),
          ...(input.is_ai_data_processing_approved !== undefined
            ? { isAiDataProcessingApproved: input.is_ai_data_processing_approved }
            : {}),
        },
      });
      return load(m.id, m.level);
    },

    /**
     * Owners only. Refused while the organization still has projects: a project's data is purged
     * by the job runner after DELETE /api/projects/:id/, and deleting the organization first
     * would take the project rows that purge needs with it.
     */
    async remove(userId: number, idParam: string): Promise<string> {
      const m = await membershipOf(userId, idParam);
      if (m.level < OWNER_LEVEL) throw new ForbiddenError('Only an owner of the organization can delete it.');
      const teams = await prisma.team.findMany({
        where: { organizationId: m.id },
        select: { id: true, deletedAt: true },
      });
      const live = teams.filter((t) => !t.deletedAt);
      if (live.length > 0)
        throw new ValidationError(
          `Delete the organization's ${live.length} project(s) first (DELETE /api/projects/:id/).`,
          null,
          'has_projects',
        );
      if (teams.length > 0)
        throw new ValidationError(
          "The organization's deleted projects are still being purged; try again later.",
          null,
          'purge_pending',
        );
      await prisma.organization.delete({ where: { id: m.id } });
      return m.id;
    },
  };
}

export type OrganizationService = ReturnType<typeof createOrganizationService>;
