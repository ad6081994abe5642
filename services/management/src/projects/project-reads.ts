// The project reads of /api/projects/ and /api/organizations/:id/projects/: the projects of the
// organizations the key's user belongs to, within the key's limits (key-scoping.ts), so a
// dashboard can find its project_id. Membership decides, even for staff;
// both take the caller's organizations/projects from the cached key context (the list filters
// on those organizations, so a project created in one of them shows at once; a membership
// changed elsewhere applies within the auth cache TTL). Deleted projects are gone from every
// read (filtered on deleted_at) until the job runner purges them.
import type { Prisma, PrismaClient } from '@sett/db';
import { NotFoundError } from '@sett/http';
import type { AuthContext } from '../auth/auth-context';
import type { Page } from '../pagination/pagination';
import { parseIntId } from '../validate';
import { resolveProject } from './project-access';
import { projectJson } from './project-views';

/** The projects of the caller's organizations (of one, when given) that the key reaches. */
export async function listProjects(
  prisma: PrismaClient,
  auth: AuthContext,
  page: Page,
  organizationId?: string,
) {
  const organizations = [...auth.levels.keys()].filter(
    (id) =>
      (organizationId === undefined || id === organizationId) &&
      (auth.scopedOrganizations.length === 0 || auth.scopedOrganizations.includes(id)),
  );
  const where: Prisma.TeamWhereInput = {
    organizationId: { in: organizations },
    deletedAt: null,
    ...(auth.scopedTeams.length > 0 ? { id: { in: [...auth.scopedTeams] } } : {}),
  };
  const [count, teams] = await Promise.all([
    prisma.team.count({ where }),
    prisma.team.findMany({ where, orderBy: { id: 'asc' }, skip: page.offset, take: page.limit }),
  ]);
  return { count, results: teams.map((t) => projectJson(t)) };
}

export async function retrieveProject(prisma: PrismaClient, auth: AuthContext, projectIdParam: string) {
  const id = parseIntId(projectIdParam);
  if (id && auth.teamIds.has(id)) {
    // In the cached context: read the row by primary key (404 if deleted since).
    const team = await prisma.team.findUnique({ where: { id } });
    if (!team || team.deletedAt) throw new NotFoundError('Project not found.');
    return projectJson(team);
  }
  // Unknown to the context (e.g. created since it was cached): checked against the database.
  return projectJson(await resolveProject(prisma, auth, projectIdParam));
}
