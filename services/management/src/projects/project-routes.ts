// /api/projects/: the projects (teams) of the organizations the key's user belongs to, so a
// dashboard can find its project_id. Scope project:read. Membership decides, even for staff;
// both reads take the caller's organizations/projects from the cached key context (the list
// filters on those organizations, so a project created in one of them shows at once; a
// membership changed elsewhere applies within the auth cache TTL). Writes (scope project:write):
// PATCH of the name and SDK settings (any member), and PostHog's secret key actions
// rotate_secret_token / delete_secret_token_backup (organization admins); each re-reads the
// caller's membership. POST creates a project in an organization where the caller is an admin;
// DELETE (admins) is soft and reset_token (admins) rotates the public token; both revoke the
// old token for capture and decide at once (project-service.ts). Deleted projects are gone
// from every read (filtered on deleted_at) until the job runner purges them.
import express, { type Router } from 'express';
import type { PrismaClient, Prisma } from '@sett/db';
import { NotFoundError } from '@sett/http';
import { authOf, requireScope } from '../auth/auth-context';
import { envelope, pageRequestInfo, parsePage } from '../pagination/pagination';
import { parseIntId, validateBody } from '../validate';
import { resolveProject } from './project-access';
import { validateProjectCreate, validateProjectUpdate } from './project-schemas';
import type { ProjectService } from './project-service';
import { projectJson } from './project-views';

export function projectRoutes({
  prisma,
  projects,
  publicUrl,
  onProjectsChanged,
}: {
  prisma: PrismaClient;
  projects: ProjectService;
  publicUrl?: string;
  /** Called after a project is created or deleted (drops cached key contexts). */
  onProjectsChanged?: () => void;
}): Router {
  const router = express.Router();

  router.get('/api/projects/', async (req, res) => {
    const auth = authOf(res);
    requireScope(auth, 'project:read');
    const page = parsePage(req.query);
    const where: Prisma.TeamWhereInput = {
      organizationId: { in: [...auth.levels.keys()] },
      deletedAt: null,
    };
    const [count, teams] = await Promise.all([
      prisma.team.count({ where }),
      prisma.team.findMany({ where, orderBy: { id: 'asc' }, skip: page.offset, take: page.limit }),
    ]);
    res.json(
      envelope(
        pageRequestInfo(req, publicUrl),
        page,
        count,
        teams.map((t) => projectJson(t)),
      ),
    );
  });

  router.get('/api/projects/:projectId/', async (req, res) => {
    const auth = authOf(res);
    requireScope(auth, 'project:read');
    const id = parseIntId(req.params.projectId);
    if (id && auth.teamIds.has(id)) {
      // In the cached context: read the row by primary key (404 if deleted since).
      const team = await prisma.team.findUnique({ where: { id } });
      if (!team || team.deletedAt) throw new NotFoundError('Project not found.');
      res.json(projectJson(team));
      return;
    }
    // Unknown to the context (e.g. created since it was cached): checked against the database.
    res.json(projectJson(await resolveProject(prisma, auth, req.params.projectId)));
  });

  router.post('/api/projects/', async (req, res) => {
    const auth = authOf(res);
    requireScope(auth, 'project:write');
    const input = validateBody(validateProjectCreate, req.body);
    const user = await prisma.user.findUniqueOrThrow({
      where: { id: auth.userId },
      select: { currentOrganizationId: true },
    });
    const team = await projects.create(input, auth.userId, user.currentOrganizationId);
    onProjectsChanged?.();
    res.status(201).json(projectJson(team));
  });

  router.delete('/api/projects/:projectId/', async (req, res) => {
    const auth = authOf(res);
    requireScope(auth, 'project:write');
    const team = await resolveProject(prisma, auth, req.params.projectId);
    await projects.remove(team, auth.userId);
    onProjectsChanged?.();
    res.status(204).end();
  });

  // PostHog's action is a PATCH; POST is accepted too. The new token is in the response.
  for (const method of ['patch', 'post'] as const)
    router[method]('/api/projects/:projectId/reset_token/', async (req, res) => {
      const auth = authOf(res);
      requireScope(auth, 'project:write');
      const team = await resolveProject(prisma, auth, req.params.projectId);
      res.json(projectJson(await projects.resetToken(team, auth.userId)));
    });

  router.patch('/api/projects/:projectId/', async (req, res) => {
    const auth = authOf(res);
    requireScope(auth, 'project:write');
    const team = await resolveProject(prisma, auth, req.params.projectId);
    const input = validateBody(validateProjectUpdate, req.body);
    res.json(projectJson(await projects.update(team, input, auth.userId)));
  });

  // PATCH as in PostHog; the new key is in this response only.
  router.patch('/api/projects/:projectId/rotate_secret_token/', async (req, res) => {
    const auth = authOf(res);
    requireScope(auth, 'project:write');
    const team = await resolveProject(prisma, auth, req.params.projectId);
    const rotated = await projects.rotateSecretToken(team, auth.userId);
    onProjectsChanged?.(); // remembered secret keys (auth-middleware) must not outlive a rotation
    res.json(projectJson(rotated.team, rotated.secretApiToken));
  });

  router.patch('/api/projects/:projectId/delete_secret_token_backup/', async (req, res) => {
    const auth = authOf(res);
    requireScope(auth, 'project:write');
    const team = await resolveProject(prisma, auth, req.params.projectId);
    const updated = await projects.deleteSecretTokenBackup(team, auth.userId);
    onProjectsChanged?.(); // the backup key must stop working at once
    res.json(projectJson(updated));
  });

  return router;
}
