// The users read path in one statement through the pg pool: the page (or one user) with its
// memberships, the visible organizations of those users (teams and member count for current
// ones) and, for lists, the total count. Replaces 5–6 Prisma queries per request; the rows
// feed buildUserViews, the same shaping as before (a test compares it with the old path).
// Pages are ordered by users.id (primary key index), so OFFSET walks the index. Member counts
// of the viewer's organizations come from a short in-process cache (member-count-cache.ts).
import { createHash } from 'node:crypto';
import type pg from 'pg';
import type { Page } from '../pagination/pagination';
import { isoMs, SqlParams } from '../read-sql';
import { buildUserViews, type OrganizationViewRow, type UserJson, type UserViewRow } from './user-views';
import type { MemberCountCache } from './member-count-cache';
import type { Viewer } from './viewer';

const TEAM_JSON = `json_build_object(
  'id', t.id, 'uuid', t.uuid, 'organizationId', t.organization_id, 'projectId', t.project_id,
  'apiToken', t.api_token, 'name', t.name, 'completedSnippetOnboarding', t.completed_snippet_onboarding,
  'hasCompletedOnboardingFor', t.has_completed_onboarding_for, 'ingestedEvent', t.ingested_event,
  'isDemo', t.is_demo, 'timezone', t.timezone, 'accessControl', t.access_control)`;

// Teams and member count only for organizations that are some listed user's current one; the
// count comes from the in-process cache (CTE known) when fresh, else it is counted (COALESCE
// evaluates the subquery only when the cache had nothing).
const ORG_JSON = `json_build_object(
  'id', o.id, 'name', o.name, 'slug', o.slug, 'logoMediaId', o.logo_media_id,
  'createdAt', ${isoMs('o.created_at')}, 'updatedAt', ${isoMs('o.updated_at')},
  'pluginsAccessLevel', o.plugins_access_level, 'availableProductFeatures', o.available_product_features,
  'isMemberJoinEmailEnabled', o.is_member_join_email_enabled, 'metadata', o.metadata,
  'customerId', o.customer_id, 'enforce2fa', o.enforce_2fa,
  'isAiDataProcessingApproved', o.is_ai_data_processing_approved,
  'teams', CASE WHEN o.id IN (SELECT id FROM cur) THEN
    (SELECT coalesce(json_agg(${TEAM_JSON} ORDER BY t.id), '[]') FROM teams t WHERE t.organization_id = o.id AND t.deleted_at IS NULL) END,
  'memberCount', CASE WHEN o.id IN (SELECT id FROM cur) THEN coalesce(
    (SELECT k.n FROM known k WHERE k.id = o.id),
    (SELECT count(*) FROM organization_memberships c WHERE c.organization_id = o.id)) END)`;

// has_password as before: Boolean(password), so an empty string counts as none.
const USER_JSON = `json_build_object(
  'id', u.id, 'uuid', u.uuid, 'distinctId', u.distinct_id, 'firstName', u.first_name,
  'lastName', u.last_name, 'email', u.email, 'pendingEmail', u.pending_email,
  'isEmailVerified', u.is_email_verified, 'notificationSettings', u.notification_settings,
  'anonymizeData', u.anonymize_data, 'toolbarMode', u.toolbar_mode,
  'hasPassword', coalesce(u.password, '') <> '', 'isStaff', u.is_staff,
  'eventsColumnConfig', u.events_column_config, 'hasSeenProductIntroFor', u.has_seen_product_intro_for,
  'scenePersonalisation', u.scene_personalisation, 'themeMode', u.theme_mode,
  'hedgehogConfig', u.hedgehog_config, 'roleAtOrganization', u.role_at_organization,
  'currentOrganizationId', u.current_organization_id, 'currentTeamId', u.current_team_id,
  'dateJoined', ${isoMs('u.date_joined')}, 'totpEnabled', u.totp_enabled,
  'memberships', coalesce(mm.list, '[]'))`;

interface RawUser extends Omit<UserViewRow, 'dateJoined'> {
  dateJoined: string;
}
interface RawOrg extends Omit<OrganizationViewRow, 'createdAt' | 'updatedAt'> {
  createdAt: string;
  updatedAt: string;
}
interface ReadRow {
  count?: number;
  users: RawUser[];
  orgs: RawOrg[];
}

/**
 * `page` selects the users to shape (alias u, ordered, paged); `count` is a scalar subquery
 * for the total, or null. Organizations are restricted to the ones the viewer can see.
 */
function statement(
  viewer: Viewer,
  known: ReadonlyMap<string, number>,
  p: SqlParams,
  page: string,
  count: string | null,
) {
  const orgVisible = viewer.isStaff ? 'true' : `o.id = ANY(${p.add([...viewer.levels.keys()])}::uuid[])`;
  return `
WITH page AS MATERIALIZED (${page}
), mem AS MATERIALIZED (
  SELECT m.user_id, m.organization_id, m.level, m.joined_at, m.id
  FROM organization_memberships m WHERE m.user_id = ANY(ARRAY(SELECT id FROM page))
), known AS (
  SELECT * FROM unnest(${p.add([...known.keys()])}::uuid[], ${p.add([...known.values()])}::int[]) AS k(id, n)
), cur AS (
  SELECT DISTINCT current_organization_id AS id FROM page WHERE current_organization_id IS NOT NULL
)
SELECT
  ${count ?? 'NULL::int'} AS count,
  (SELECT coalesce(json_agg(${USER_JSON} ORDER BY u.id), '[]')
     FROM page u LEFT JOIN LATERAL (
       SELECT json_agg(json_build_object('organizationId', organization_id, 'level', level)
                       ORDER BY joined_at, id) AS list
       FROM mem WHERE mem.user_id = u.id) mm ON true) AS users,
  (SELECT coalesce(json_agg(${ORG_JSON}), '[]') FROM organizations o
     WHERE (o.id IN (SELECT organization_id FROM mem) OR o.id IN (SELECT id FROM cur)) AND ${orgVisible}) AS orgs`;
}

/**
 * The page and count of a users list. Staff page the users table by its primary key (as a
 * plain `SELECT … ORDER BY id` would). Anyone else sees the members of their organizations,
 * themselves among them: the page walks the (organization_id, user_id) unique index, so only
 * ids are read until the page is known, and the total of a single organization is its member
 * count (from the in-process cache when fresh, so a page costs no count at all).
 */
function listQueries(
  viewer: Viewer,
  p: SqlParams,
  page: Page,
  isStaff: boolean | undefined,
  knownCount: number | undefined,
): { page: string; count: string | null } {
  const staffFilter = isStaff === undefined ? '' : `u.is_staff = ${p.add(isStaff)}`;
  const limits = () => `LIMIT ${p.add(page.limit)} OFFSET ${p.add(page.offset)}`;
  if (viewer.isStaff || viewer.levels.size === 0) {
    const where = [viewer.isStaff ? '' : `u.id = ${p.add(viewer.userId)}`, staffFilter].filter(Boolean);
    const cond = where.length ? `WHERE ${where.join(' AND ')}` : '';
    return {
      page: `SELECT u.* FROM users u ${cond} ORDER BY u.id ${limits()}`,
      count: `(SELECT count(*)::int FROM users u ${cond})`,
    };
  }
  // One organization (the common case): its ids come in order from the unique index, no DISTINCT.
  const ids = [...viewer.levels.keys()];
  const members =
    ids.length === 1
      ? `SELECT m.user_id FROM organization_memberships m WHERE m.organization_id = ${p.add(ids[0])}::uuid`
      : `SELECT DISTINCT m.user_id FROM organization_memberships m WHERE m.organization_id = ANY(${p.add(ids)}::uuid[])`;
  if (staffFilter)
    return {
      page: `SELECT u.* FROM users u WHERE ${staffFilter} AND u.id IN (${members}) ORDER BY u.id ${limits()}`,
      count: `(SELECT count(*)::int FROM users u WHERE ${staffFilter} AND u.id IN (${members}))`,
    };
  return {
    // ARRAY(): the planner then reads the page's 100 users by primary key, not the whole table.
    page: `SELECT u.* FROM users u WHERE u.id = ANY(ARRAY(${members} ORDER BY m.user_id ${limits()})) ORDER BY u.id`,
    count: knownCount !== undefined ? String(knownCount) : `(SELECT count(*)::int FROM (${members}) v)`,
  };
}

function toRows(raw: ReadRow): { users: UserViewRow[]; orgs: OrganizationViewRow[] } {
  return {
    users: raw.users.map((u) => ({ ...u, dateJoined: new Date(u.dateJoined) })),
    orgs: raw.orgs.map((o) => ({ ...o, createdAt: new Date(o.createdAt), updatedAt: new Date(o.updatedAt) })),
  };
}

/**
 * Fresh cached member counts the statement may use: those of the viewer's organizations (for
 * a member, every organization it can see; staff looking at other organizations count them).
 */
function knownCounts(viewer: Viewer, memberCounts: MemberCountCache | undefined) {
  return memberCounts ? memberCounts.known(viewer.levels.keys()) : new Map<string, number>();
}

/** Caches the counts the statement computed (the ones it did not get from the cache). */
function storeCounts(
  memberCounts: MemberCountCache | undefined,
  generation: number,
  known: ReadonlyMap<string, number>,
  orgs: readonly RawOrg[],
) {
  if (!memberCounts) return;
  const counted: [string, number][] = [];
  for (const o of orgs) if (o.memberCount !== null && !known.has(o.id)) counted.push([o.id, o.memberCount]);
  if (counted.length) memberCounts.store(generation, counted);
}

/** Statements are prepared once per connection and text (pg names them): no planning per request. */
function prepared(text: string, values: unknown[]) {
  return { name: `sett_users_${createHash('sha1').update(text).digest('hex').slice(0, 16)}`, text, values };
}

export function createUserReadStore(pool: pg.Pool, memberCounts?: MemberCountCache) {
  /** The statement for a page (its parameters already in p), member counts from the cache. */
  async function run(
    viewer: Viewer,
    p: SqlParams,
    known: ReadonlyMap<string, number>,
    generation: number,
    page: string,
    count: string | null,
  ) {
    const sql = statement(viewer, known, p, page, count);
    const raw = (await pool.query<ReadRow>(prepared(sql, p.values))).rows[0]!;
    storeCounts(memberCounts, generation, known, raw.orgs);
    return raw;
  }

  return {
    /** Users the viewer can see (staff: all), optionally by is_staff, ordered by id. */
    async list(
      viewer: Viewer,
      page: Page,
      isStaff: boolean | undefined,
    ): Promise<{ count: number; results: UserJson[] }> {
      const generation = memberCounts?.generation() ?? 0;
      const known = knownCounts(viewer, memberCounts);
      const p = new SqlParams();
      const single = viewer.levels.size === 1 ? known.get(viewer.levels.keys().next().value!) : undefined;
      const q = listQueries(viewer, p, page, isStaff, viewer.isStaff ? undefined : single);
      const raw = await run(viewer, p, known, generation, q.page, q.count);
      const { users, orgs } = toRows(raw);
      return { count: raw.count ?? 0, results: buildUserViews(viewer, users, orgs) };
    },

    /**
     * One user by id or uuid with its User shape, whether or not the viewer can see it (the
     * caller decides from `row.memberships`); undefined when there is no such user.
     */
    async one(
      viewer: Viewer,
      by: { id: number } | { uuid: string },
    ): Promise<{ row: UserViewRow; json: UserJson } | undefined> {
      const generation = memberCounts?.generation() ?? 0;
      const known = knownCounts(viewer, memberCounts);
      const p = new SqlParams();
      const where = 'id' in by ? `u.id = ${p.add(by.id)}` : `u.uuid = ${p.add(by.uuid)}::uuid`;
      const raw = await run(viewer, p, known, generation, `SELECT u.* FROM users u WHERE ${where}`, null);
      const { users, orgs } = toRows(raw);
      const row = users[0];
      return row ? { row, json: buildUserViews(viewer, [row], orgs)[0]! } : undefined;
    },
  };
}

export type UserReadStore = ReturnType<typeof createUserReadStore>;
