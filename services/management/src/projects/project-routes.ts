// /api/projects/: the projects (teams) of the organizations the key's user belongs to, so a
// dashboard can find its project_id. Scope project:read. Membership decides, even for staff.
import express, { type Router } from 'express';
import type { PrismaClient, Prisma } from '@sett/db';
import { authOf, requireScope } from '../auth/auth-context';
import { envelope, pageRequestInfo, parsePage } from '../pagination/pagination';
import { resolveProject } from './project-access';
import { teamJson } from './project-views';

export function projectRoutes({ prisma, publicUrl }: { prisma: PrismaClient; publicUrl?: string }): Router {
  const router = express.Router();

  router.get('/api/projects/', async (req, res) => {
    const auth = authOf(res);
    requireScope(auth, 'project:read');
    const page = parsePage(req.query);
    const where: Prisma.TeamWhereInput = { organization: { memberships: { some: { userId: auth.userId } } } };
    const [count, teams] = await Promise.all([
      prisma.team.count({ where }),
      prisma.team.findMany({ where, orderBy: { id: 'asc' }, skip: page.offset, take: page.limit }),
    ]);
    res.json(envelope(pageRequestInfo(req, publicUrl), page, count, teams.map(teamJson)));
  });

  router.get('/api/projects/:projectId/', async (req, res) => {
    const auth = authOf(res);
    requireScope(auth, 'project:read');
    res.json(teamJson(await resolveProject(prisma, auth, req.params.projectId)));
  });

  return router;
}
