// The caller as the visibility rules see it: staff or not, and its level in each organization.
// Reads take it from the cached key context (viewerOf: no query; membership changes made
// elsewhere apply within the auth cache TTL); writes load it fresh (loadViewer: one indexed
// query) so a permission decision for a change never rests on a cached level.
import type { PrismaClient } from '@sett/db';
import type { AuthContext } from '../auth/auth-context';

export interface Viewer {
  userId: number;
  isStaff: boolean;
  /** organization id -> membership level */
  levels: ReadonlyMap<string, number>;
}

/** The caller's viewer from the (cached) key context: for read paths. */
export function viewerOf(auth: AuthContext): Viewer {
  return { userId: auth.userId, isStaff: auth.isStaff, levels: auth.levels };
}

/** The caller's viewer with its memberships read now: for write paths. */
export async function loadViewer(prisma: PrismaClient, auth: AuthContext): Promise<Viewer> {
  const memberships = await prisma.organizationMembership.findMany({
    where: { userId: auth.userId },
    select: { organizationId: true, level: true },
  });
  return {
    userId: auth.userId,
    isStaff: auth.isStaff,
    levels: new Map(memberships.map((m) => [m.organizationId, m.level])),
  };
}

/** Staff see everything; others see organizations they belong to. */
export function canSeeOrganization(viewer: Viewer, organizationId: string): boolean {
  return viewer.isStaff || viewer.levels.has(organizationId);
}

/** Sees a user: staff, the user itself, or anyone sharing an organization with it. */
export function canSeeUser(viewer: Viewer, userId: number, userOrgIds: readonly string[]): boolean {
  return viewer.isStaff || viewer.userId === userId || userOrgIds.some((o) => viewer.levels.has(o));
}

/**
 * Changes an account (profile, e-mail, password, 2FA, deletion): the user themself or staff.
 * Organization admins manage memberships (members API), never other people's accounts.
 */
export function canChangeAccount(viewer: Viewer, userId: number): boolean {
  return viewer.isStaff || viewer.userId === userId;
}
