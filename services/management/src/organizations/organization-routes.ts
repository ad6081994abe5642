// /api/organizations/: list and create (organization:read / organization:write), then read,
// PATCH (admins) and DELETE (owners) of one organization by id or `@current` (PostHog: the
// user's current organization). Reads and writes check the caller's membership now (one
// indexed query), not the cached key context.
import express, { type Router } from 'express';
import { authOf, requireScope } from '../auth/auth-context';
import { envelope, pageRequestInfo, parsePage } from '../pagination/pagination';
import { validateBody } from '../validate';
import { validateOrganizationCreate, validateOrganizationUpdate } from './organization-schemas';
import type { OrganizationService } from './organization-service';

export function organizationRoutes(deps: {
  organizations: OrganizationService;
  publicUrl?: string;
  /** After a create or delete: memberships changed (drops cached key contexts and counts). */
  onMembershipsChanged?: (organizationId: string) => void;
}): Router {
  const { organizations, publicUrl } = deps;
  const router = express.Router();

  router.get('/api/organizations/', async (req, res) => {
    const auth = authOf(res);
    requireScope(auth, 'organization:read');
    const page = parsePage(req.query);
    const { count, results } = await organizations.list(auth.userId, page);
    res.json(envelope(pageRequestInfo(req, publicUrl), page, count, results));
  });

  router.post('/api/organizations/', async (req, res) => {
    const auth = authOf(res);
    requireScope(auth, 'organization:write');
    const input = validateBody(validateOrganizationCreate, req.body);
    const created = await organizations.create(auth.userId, input);
    deps.onMembershipsChanged?.(created.id);
    res.status(201).json(created);
  });

  router.get('/api/organizations/:id/', async (req, res) => {
    const auth = authOf(res);
    requireScope(auth, 'organization:read');
    res.json(await organizations.retrieve(auth.userId, req.params.id));
  });

  router.patch('/api/organizations/:id/', async (req, res) => {
    const auth = authOf(res);
    requireScope(auth, 'organization:write');
    const input = validateBody(validateOrganizationUpdate, req.body);
    res.json(await organizations.update(auth.userId, req.params.id, input));
  });

  router.delete('/api/organizations/:id/', async (req, res) => {
    const auth = authOf(res);
    requireScope(auth, 'organization:write');
    const id = await organizations.remove(auth.userId, req.params.id);
    deps.onMembershipsChanged?.(id);
    res.status(204).end();
  });

  return router;
}
