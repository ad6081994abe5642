// Builds the full User shape (docs/interface.md "Users") for one user or a page of users from rows the read
// store loaded in one query (users with their memberships; the visible organizations, with
// teams and member count for current ones). Pure: the SQL lives in user-read-store.ts.
// Nested organizations the caller cannot see are left out (current ones become null), so a
// shared user does not leak the other organizations it belongs to.
import type { Prisma, User } from '@sett/db';
import {
  organizationJson,
  organizationSummaryJson,
  teamJson,
  type OrganizationRow,
  type TeamRow,
} from '../projects/project-views';
import type { Viewer } from './viewer';

/** A user as the write paths load it through Prisma (the password hash is needed there). */
export type UserRow = User & { memberships: { organizationId: string; level: number }[] };

export const userInclude = { memberships: { select: { organizationId: true, level: true } } } as const;

/** What the User shape reads: never the password hash itself, only whether there is one. */
export interface UserViewRow {
  id: number;
  uuid: string;
  distinctId: string;
  firstName: string;
  lastName: string;
  email: string;
  pendingEmail: string | null;
  isEmailVerified: boolean;
  notificationSettings: Prisma.JsonValue;
  anonymizeData: boolean;
  toolbarMode: string | null;
  hasPassword: boolean;
  isStaff: boolean;
  eventsColumnConfig: Prisma.JsonValue;
  hasSeenProductIntroFor: Prisma.JsonValue | null;
  scenePersonalisation: Prisma.JsonValue;
  themeMode: string | null;
  hedgehogConfig: Prisma.JsonValue | null;
  roleAtOrganization: string | null;
  currentOrganizationId: string | null;
  currentTeamId: number | null;
  dateJoined: Date;
  totpEnabled: boolean;
  /** in membership order (joined_at, id) */
  memberships: { organizationId: string; level: number }[];
}

/** An organization the viewer may see; teams and memberCount are loaded for current ones only. */
export interface OrganizationViewRow extends OrganizationRow {
  teams: TeamRow[] | null;
  memberCount: number | null;
}

export function buildUserViews(viewer: Viewer, users: UserViewRow[], visibleOrgs: OrganizationViewRow[]) {
  const orgById = new Map(visibleOrgs.map((o) => [o.id, o]));
  const level = (orgId: string) => viewer.levels.get(orgId) ?? null;

  // Users of a page mostly share their current organization and project: one JSON object each
  // (built once; the list serialiser also writes each once, see stringifyPage).
  const orgJsonById = new Map<string, ReturnType<typeof organizationJson>>();
  const teamJsonById = new Map<number, ReturnType<typeof teamJson>>();
  const orgJson = (o: OrganizationViewRow) => {
    let j = orgJsonById.get(o.id);
    if (!j) orgJsonById.set(o.id, (j = organizationJson(o, o.teams ?? [], level(o.id), o.memberCount ?? 0)));
    return j;
  };
  const teamJsonOf = (t: TeamRow) => {
    let j = teamJsonById.get(t.id);
    if (!j) teamJsonById.set(t.id, (j = teamJson(t)));
    return j;
  };

  return users.map((u) => {
    const currentOrg = u.currentOrganizationId ? orgById.get(u.currentOrganizationId) : undefined;
    const orgTeams = currentOrg?.teams ?? [];
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
      has_password: u.hasPassword,
      is_staff: u.isStaff,
      is_impersonated: false,
      is_impersonated_until: null,
      sensitive_session_expires_at: null,
      team: currentTeam ? teamJsonOf(currentTeam) : null,
      organization: currentOrg ? orgJson(currentOrg) : null,
      organizations: u.memberships
        .map((m) => orgById.get(m.organizationId))
        .filter((o): o is OrganizationViewRow => o !== undefined)
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

export type UserJson = ReturnType<typeof buildUserViews>[number];
