// /api/projects/:project_id/early_access_feature/ (docs/interface.md, "Early access features"): list and retrieve need
// early_access_feature:read, create, PATCH and DELETE early_access_feature:write. Reads check
// the project against the cached key context; writes always against the database.
import express, { type Router } from 'express';
import type { PrismaClient } from '@sett/db';
import { authOf, requireScope } from '../auth/auth-context';
import { envelope, pageRequestInfo, parsePage } from '../pagination/pagination';
import { resolveProject, resolveReadableProjectId } from '../projects/project-access';
import { validateBody } from '../validate';
import {
  validateEarlyAccessFeatureCreate,
  validateEarlyAccessFeatureUpdate,
} from './early-access-feature-schemas';
import type { EarlyAccessFeatureService } from './early-access-feature-service';

const BASE = '/api/projects/:projectId/early_access_feature/';

export function earlyAccessFeatureRoutes(deps: {
  prisma: PrismaClient;
  features: EarlyAccessFeatureService;
  publicUrl?: string;
}): Router {
  const { prisma, features, publicUrl } = deps;
  const router = express.Router();

  router.get(BASE, async (req, res) => {
    const auth = authOf(res);
    requireScope(auth, 'early_access_feature:read');
    const teamId = await resolveReadableProjectId(prisma, auth, req.params.projectId);
    const page = parsePage(req.query);
    const { count, results } = await features.list(teamId, page);
    res.json(envelope(pageRequestInfo(req, publicUrl), page, count, results));
  });
  router.post(BASE, async (req, res) => {
    const auth = authOf(res);
    requireScope(auth, 'early_access_feature:write');
    const team = await resolveProject(prisma, auth, req.params.projectId);
    const body = validateBody(validateEarlyAccessFeatureCreate, req.body);
    res.status(201).json(await features.create(team.id, auth.userId, body));
  });
  router.get(`${BASE}:id/`, async (req, res) => {
    const auth = authOf(res);
    requireScope(auth, 'early_access_feature:read');
    const teamId = await resolveReadableProjectId(prisma, auth, req.params.projectId);
    res.json(await features.retrieve(teamId, req.params.id));
  });
  router.patch(`${BASE}:id/`, async (req, res) => {
    const auth = authOf(res);
    requireScope(auth, 'early_access_feature:write');
    const team = await resolveProject(prisma, auth, req.params.projectId);
    const body = validateBody(validateEarlyAccessFeatureUpdate, req.body);
    res.json(await features.update(team.id, req.params.id, body));
  });
  router.delete(`${BASE}:id/`, async (req, res) => {
    const auth = authOf(res);
    requireScope(auth, 'early_access_feature:write');
    const team = await resolveProject(prisma, auth, req.params.projectId);
    await features.remove(team.id, req.params.id);
    res.status(204).end();
  });

  return router;
}
