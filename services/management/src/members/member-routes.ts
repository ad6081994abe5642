// /api/organizations/:id/members/ (PostHog's paths, members keyed by user uuid or `@me`):
// GET (organization_member:read, any member), POST an existing user by e-mail with a level,
// PATCH a level, DELETE a membership (organization_member:write; the rules are in
// member-service.ts). The organization is resolved from the caller's membership (404 otherwise).
import express, { type Router } from 'express';
import { authOf, requireScope } from '../auth/auth-context';
import type { OrganizationService } from '../organizations/organization-service';
import { validateMemberCreate, validateMemberUpdate } from '../organizations/organization-schemas';
import { envelope, pageRequestInfo, parsePage } from '../pagination/pagination';
import { validateBody } from '../validate';
import type { MemberService } from './member-service';

const BASE = '/api/organizations/:id/members/';

export function memberRoutes(deps: {
  organizations: OrganizationService;
  members: MemberService;
  publicUrl?: string;
  /** After a membership changed: cached key contexts and that organization's member count go. */
  onMembershipsChanged?: (organizationId: string) => void;
}): Router {
  const { organizations, members, publicUrl } = deps;
  const router = express.Router();

  router.get(BASE, async (req, res) => {
    const auth = authOf(res);
    requireScope(auth, 'organization_member:read');
    const org = await organizations.membershipOf(auth.userId, req.params.id);
    const page = parsePage(req.query);
    const { count, results } = await members.list(org.id, page);
    res.json(envelope(pageRequestInfo(req, publicUrl), page, count, results));
  });

  router.post(BASE, async (req, res) => {
    const auth = authOf(res);
    requireScope(auth, 'organization_member:write');
    const org = await organizations.membershipOf(auth.userId, req.params.id);
    const input = validateBody(validateMemberCreate, req.body);
    const created = await members.add(org.id, auth.userId, input);
    deps.onMembershipsChanged?.(org.id);
    res.status(201).json(created);
  });

  router.get(`${BASE}:user/`, async (req, res) => {
    const auth = authOf(res);
    requireScope(auth, 'organization_member:read');
    const org = await organizations.membershipOf(auth.userId, req.params.id);
    res.json(await members.retrieve(org.id, auth.userId, req.params.user));
  });

  router.patch(`${BASE}:user/`, async (req, res) => {
    const auth = authOf(res);
    requireScope(auth, 'organization_member:write');
    const org = await organizations.membershipOf(auth.userId, req.params.id);
    const input = validateBody(validateMemberUpdate, req.body);
    const updated = await members.updateLevel(org.id, auth.userId, req.params.user, input.level);
    deps.onMembershipsChanged?.(org.id);
    res.json(updated);
  });

  router.delete(`${BASE}:user/`, async (req, res) => {
    const auth = authOf(res);
    requireScope(auth, 'organization_member:write');
    const org = await organizations.membershipOf(auth.userId, req.params.id);
    await members.remove(org.id, auth.userId, req.params.user);
    deps.onMembershipsChanged?.(org.id);
    res.status(204).end();
  });

  return router;
}
