// REFERENCE ONLY (tests): the User view builder as it was before the read paths moved to
// hand-written SQL, kept verbatim (imports aside) so a test can check the fast path returns
// exactly the same JSON. Do not use from src.
// Builds the full User shape (docs/interface.md "Users") for one user or a page of users with a fixed number of
// queries per page (organizations, their teams, member counts), whatever the page size.
// Nested organizations the caller cannot see are left out (current ones become null), so a
// shared user does not leak the other organizations it belongs to.
import type { Organization, Prisma, PrismaClient, Team, User } from '@sett/db';
import { organizationJson, organizationSummaryJson, teamJson } from '../../src/projects/project-views';
import { canSeeOrganization, type Viewer } from '../../src/users/viewer';

export type UserRow = User & { memberships: { organizationId: string; level: number }[] };

export const userInclude = { memberships: { select: { organizationId: true, level: true } } } as const;

export async function userViews(prisma: PrismaClient, viewer: Viewer, users: UserRow[]) {
  const orgIds = new Set<string>();
  const currentOrgIds = new Set<string>();
  for (const u of users) {
    for (const m of u.memberships)
      if (canSeeOrganization(viewer, m.organizationId)) orgIds.add(m.organizationId);
    if (u.currentOrganizationId && canSeeOrganization(viewer, u.currentOrganizationId)) {
      orgIds.add(u.currentOrganizationId);
      currentOrgIds.add(u.currentOrganizationId);
    }
  }
  const [orgs, teams, counts] = orgIds.size
    ? await Promise.all([
        prisma.organization.findMany({ where: { id: { in: [...orgIds] } } }),
        prisma.team.findMany({
          where: { organizationId: { in: [...currentOrgIds] } },
          orderBy: { id: 'asc' },
        }),
        prisma.organizationMembership.groupBy({
          by: ['organizationId'],
          where: { organizationId: { in: [...currentOrgIds] } },
          _count: { _all: true },
        }),
      ])
    : [[] as Organization[], [] as Team[], [] as { organizationId: string; _count: { _all: number } }[]];
  const orgById = new Map(orgs.map((o) => [o.id, o]));
  const teamsByOrg = new Map<string, Team[]>();
  for (const t of teams) teamsByOrg.set(t.organizationId, [...(teamsByOrg.get(t.organizationId) ?? []), t]);
  const countByOrg = new Map(counts.map((c) => [c.organizationId, c._count._all]));
  const level = (orgId: string) => viewer.levels.get(orgId) ?? null;

  return users.map((u) => {
    const currentOrg = u.currentOrganizationId ? orgById.get(u.currentOrganizationId) : undefined;
    const orgTeams = currentOrg ? (teamsByOrg.get(currentOrg.id) ?? []) : [];
    const currentTeam = orgTeams.find((t) => t.id === u.currentTeamId);
    return {
      date_joined: u.dateJoined.toISOString(),
      uuid: u.uuid,
      distinct_id: u.distinctId,
      first_name: u.firstName,
      last_name: u.lastName,
      email: u.email,
      pending_email: u.pendingEmail,
      is_email_verified: u.isEmailVerified,
      notification_settings: u.notificationSettings,
      anonymize_data: u.anonymizeData,
      toolbar_mode: u.toolbarMode,
      has_password: Boolean(u.password),
      is_staff: u.isStaff,
      is_impersonated: false,
      is_impersonated_until: null,
      sensitive_session_expires_at: null,
      team: currentTeam ? teamJson(currentTeam) : null,
      organization: currentOrg
        ? organizationJson(currentOrg, orgTeams, level(currentOrg.id), countByOrg.get(currentOrg.id) ?? 0)
        : null,
      organizations: u.memberships
        .map((m) => orgById.get(m.organizationId))
        .filter((o): o is Organization => o !== undefined)
        .map((o) => organizationSummaryJson(o, level(o.id))),
      events_column_config: u.eventsColumnConfig,
      is_2fa_enabled: u.totpEnabled,
      has_social_auth: false,
      has_seen_product_intro_for: u.hasSeenProductIntroFor ?? null,
      scene_personalisation: Array.isArray(u.scenePersonalisation) ? u.scenePersonalisation : [],
      theme_mode: u.themeMode,
      hedgehog_config: u.hedgehogConfig ?? null,
      role_at_organization: u.roleAtOrganization,
    };
  });
}

export type UserJson = Awaited<ReturnType<typeof userViews>>[number];

// The list query as it was (count + page through Prisma), feeding userViews above.
function visibleWhere(viewer: Viewer): Prisma.UserWhereInput {
  if (viewer.isStaff) return {};
  return {
    OR: [
      { id: viewer.userId },
      { memberships: { some: { organizationId: { in: [...viewer.levels.keys()] } } } },
    ],
  };
}

export async function referenceUserList(
  prisma: PrismaClient,
  viewer: Viewer,
  page: { limit: number; offset: number },
  isStaff: boolean | undefined,
) {
  const where: Prisma.UserWhereInput = {
    ...visibleWhere(viewer),
    ...(isStaff === undefined ? {} : { isStaff }),
  };
  const [count, rows] = await Promise.all([
    prisma.user.count({ where }),
    prisma.user.findMany({
      where,
      include: userInclude,
      orderBy: { id: 'asc' },
      skip: page.offset,
      take: page.limit,
    }),
  ]);
  return { count, results: await userViews(prisma, viewer, rows) };
}
