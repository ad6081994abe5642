// The project of a /api/projects/:project_id/... path, if the caller's user is a member of its
// organization; otherwise 404 (another organization's project is never confirmed to exist).
// Writes use resolveProject (always a query); reads may use the cached key context.
import type { PrismaClient, Team } from '@sett/db';
import { NotFoundError } from '@sett/http';
import type { AuthContext } from '../auth/auth-context';
import { parseIntId } from '../validate';

export async function resolveProject(
  prisma: PrismaClient,
  auth: AuthContext,
  projectIdParam: string,
): Promise<Team> {
  const id = parseIntId(projectIdParam);
  const team = id
    ? await prisma.team.findFirst({
        where: { id, organization: { memberships: { some: { userId: auth.userId } } } },
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
  const id = parseIntId(projectIdParam);
  if (id && auth.teamIds.has(id)) return id;
  return (await resolveProject(prisma, auth, projectIdParam)).id;
}
