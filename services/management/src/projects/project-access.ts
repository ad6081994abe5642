// The project of a /api/projects/:project_id/... path, if the caller's user is a member of its
// organization; otherwise 404 (another organization's project is never confirmed to exist).
// Writes use resolveProject (always a query); reads may use the cached key context. Every route
// resolves :project_id here, so `@current` (PostHog: the user's current project) works on all.
import type { PrismaClient, Team } from '@sett/db';
import { NotFoundError } from '@sett/http';
import type { AuthContext } from '../auth/auth-context';
import { parseIntId } from '../validate';

export const CURRENT_PROJECT = '@current';

/**
 * The project id a path parameter names: a positive int4, or `@current` for the user's current
 * project (users.current_team_id), else, as PostHog falls back when none is set or it is no
 * longer reachable, the user's first project. undefined when it names none.
 */
export function projectIdOf(auth: AuthContext, projectIdParam: string): number | undefined {
  if (projectIdParam !== CURRENT_PROJECT) return parseIntId(projectIdParam);
  const current = auth.currentTeamId;
  if (current !== undefined && current !== null && auth.teamIds.has(current)) return current;
  let first: number | undefined;
  for (const id of auth.teamIds) if (first === undefined || id < first) first = id;
  return first;
}

export async function resolveProject(
  prisma: PrismaClient,
  auth: AuthContext,
  projectIdParam: string,
): Promise<Team> {
  const id = projectIdOf(auth, projectIdParam);
  const team = id
    ? await prisma.team.findFirst({
        where: { id, deletedAt: null, organization: { memberships: { some: { userId: auth.userId } } } },
      })
    : null;
  if (!team) throw new NotFoundError('Project not found.');
  return team;
}

/**
 * The id of a project the caller may read, for read paths: a project in the cached key
 * context needs no query; any other id is checked against the database as resolveProject does
 * (so a project created since the context was loaded is found at once). Losing access applies
 * within the auth cache TTL.
 */
export async function resolveReadableProjectId(
  prisma: PrismaClient,
  auth: AuthContext,
  projectIdParam: string,
): Promise<number> {
  const id = projectIdOf(auth, projectIdParam);
  if (id && auth.teamIds.has(id)) return id;
  return (await resolveProject(prisma, auth, projectIdParam)).id;
}
