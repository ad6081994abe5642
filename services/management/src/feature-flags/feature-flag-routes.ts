// /api/projects/:project_id/feature_flags/: list and retrieve (feature_flag:read), create,
// PATCH and DELETE (feature_flag:write; DELETE is a soft delete, 204). Reads check the project
// against the cached key context; writes always against the database.
import express, { type Router } from 'express';
import type { PrismaClient } from '@sett/db';
import { NotFoundError } from '@sett/http';
import { authOf, requireScope } from '../auth/auth-context';
import { envelope, pageRequestInfo, parsePage } from '../pagination/pagination';
import { resolveProject, resolveReadableProjectId } from '../projects/project-access';
import { parseIntId, validateBody } from '../validate';
import { validateFeatureFlagCreate, validateFeatureFlagUpdate } from './feature-flag-schemas';
import type { FeatureFlagService } from './feature-flag-service';

const BASE = '/api/projects/:projectId/feature_flags/';

function flagId(param: string): number {
  const id = parseIntId(param);
  if (!id) throw new NotFoundError();
  return id;
}

export function featureFlagRoutes({
  prisma,
  flags,
  publicUrl,
}: {
  prisma: PrismaClient;
  flags: FeatureFlagService;
  publicUrl?: string;
}): Router {
  const router = express.Router();

  router.get(BASE, async (req, res) => {
    const auth = authOf(res);
    requireScope(auth, 'feature_flag:read');
    const teamId = await resolveReadableProjectId(prisma, auth, req.params.projectId);
    const page = parsePage(req.query);
    const { count, results } = await flags.list(teamId, page);
    res.json(envelope(pageRequestInfo(req, publicUrl), page, count, results));
  });
  router.post(BASE, async (req, res) => {
    const auth = authOf(res);
    requireScope(auth, 'feature_flag:write');
    const team = await resolveProject(prisma, auth, req.params.projectId);
    const body = validateBody(validateFeatureFlagCreate, req.body);
    res.status(201).json(await flags.create(team.id, auth.userId, body));
  });
  router.get(`${BASE}:id/`, async (req, res) => {
    const auth = authOf(res);
    requireScope(auth, 'feature_flag:read');
    const teamId = await resolveReadableProjectId(prisma, auth, req.params.projectId);
    res.json(await flags.retrieve(teamId, flagId(req.params.id)));
  });
  router.patch(`${BASE}:id/`, async (req, res) => {
    const auth = authOf(res);
    requireScope(auth, 'feature_flag:write');
    const team = await resolveProject(prisma, auth, req.params.projectId);
    const body = validateBody(validateFeatureFlagUpdate, req.body);
    res.json(await flags.update(team.id, flagId(req.params.id), body));
  });
  router.delete(`${BASE}:id/`, async (req, res) => {
    const auth = authOf(res);
    requireScope(auth, 'feature_flag:write');
    const team = await resolveProject(prisma, auth, req.params.projectId);
    await flags.remove(team.id, flagId(req.params.id));
    res.status(204).end();
  });

  return router;
}
