// /api/projects/: the projects (teams) of the organizations the key's user belongs to, so a
// dashboard can find its project_id. Scope project:read. Membership decides, even for staff;
// both reads take the caller's organizations/projects from the cached key context (the list
// filters on those organizations, so a project created in one of them shows at once; a
// membership changed elsewhere applies within the auth cache TTL).
import express, { type Router } from 'express';
import type { PrismaClient, Prisma } from '@sett/db';
import { NotFoundError } from '@sett/http';
import { authOf, requireScope } from '../auth/auth-context';
import { envelope, pageRequestInfo, parsePage } from '../pagination/pagination';
import { parseIntId } from '../validate';
import { resolveProject } from './project-access';
import { teamJson } from './project-views';

export function projectRoutes({ prisma, publicUrl }: { prisma: PrismaClient; publicUrl?: string }): Router {
  const router = express.Router();

  router.get('/api/projects/', async (req, res) => {
    const auth = authOf(res);
    requireScope(auth, 'project:read');
    const page = parsePage(req.query);
    const where: Prisma.TeamWhereInput = { organizationId: { in: [...auth.levels.keys()] } };
    const [count, teams] = await Promise.all([
      prisma.team.count({ where }),
      prisma.team.findMany({ where, orderBy: { id: 'asc' }, skip: page.offset, take: page.limit }),
    ]);
    res.json(envelope(pageRequestInfo(req, publicUrl), page, count, teams.map(teamJson)));
  });

  router.get('/api/projects/:projectId/', async (req, res) => {
    const auth = authOf(res);
    requireScope(auth, 'project:read');
    const id = parseIntId(req.params.projectId);
    if (id && auth.teamIds.has(id)) {
      // In the cached context: read the row by primary key (404 if deleted since).
      const team = await prisma.team.findUnique({ where: { id } });
      if (!team) throw new NotFoundError('Project not found.');
      res.json(teamJson(team));
      return;
    }
    // Unknown to the context (e.g. created since it was cached): checked against the database.
    res.json(teamJson(await resolveProject(prisma, auth, req.params.projectId)));
  });

  return router;
}
