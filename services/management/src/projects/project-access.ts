// The project of a /api/projects/:project_id/... path, if the caller's user is a member of its
// organization; otherwise 404 (another organization's project is never confirmed to exist).
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
