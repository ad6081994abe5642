// A personal API key may be limited to some projects (scoped_teams) or organizations
// (scoped_organizations); empty means all, as in PostHog. The limit applies on every route,
// from the route's path alone, before its handler runs (personalKeyAuthenticator calls
// checkKeyScoping):
// - a project path (`:project_id`, also under /api/environments/) outside the key's projects
//   or organizations: 403 naming the project;
// - an organization path (/api/organizations/:id/...) outside its organizations: 403 naming
//   it; a key limited to projects reads the organizations of those projects, and changes none
//   ("only supported on project-based endpoints", PostHog's words);
// - creating an organization, with any limit: 403 (it would lie outside the key's reach);
// - /api/users/ and /api/personal_api_keys/: the key's own user, not limited (PostHog's
//   exemption); a limited key creates only keys within its own limits (the key service).
// Lists (projects, organizations) show only what the key reaches (inKeyScope* below).
// Memberships are the cached key context's: a project created since it was loaded is out of
// reach of a limited key until the context is reloaded (a write in this process reloads it;
// another replica within the auth cache TTL), which fails closed.
import type { FastifyRequest } from 'fastify';
import { ForbiddenError } from '@sett/http';
import type { AuthContext } from './auth-context';
import { projectIdOf } from '../projects/project-access';

const ORGANIZATION_PATH = /^\/api\/organizations\/:id(?:\/|$)/;
const PROJECT_ONLY = 'API keys with scoped projects are only supported on project-based endpoints.';

export function isKeyScoped(auth: AuthContext): boolean {
  return auth.scopedTeams.length > 0 || auth.scopedOrganizations.length > 0;
}

/** Whether the key reaches the project (of organization `organizationId`). */
export function inKeyScopeProject(
  auth: AuthContext,
  teamId: number,
  organizationId: string | undefined,
): boolean {
  if (auth.scopedTeams.length > 0 && !auth.scopedTeams.includes(teamId)) return false;
  if (auth.scopedOrganizations.length > 0)
    return organizationId !== undefined && auth.scopedOrganizations.includes(organizationId);
  return true;
}

/** Whether the key reaches the organization (for reads: a project-limited key reaches the
 * organizations of its projects). */
export function inKeyScopeOrganization(auth: AuthContext, organizationId: string): boolean {
  if (auth.scopedOrganizations.length > 0 && !auth.scopedOrganizations.includes(organizationId)) return false;
  if (auth.scopedTeams.length > 0)
    return auth.scopedTeams.some((teamId) => auth.teamOrganizations.get(teamId) === organizationId);
  return true;
}

/** 403 unless a new project in `organizationId` would be within the key's reach. */
export function requireKeyScopeForNewProject(
  auth: AuthContext,
  organizationId: string | null | undefined,
): void {
  if (auth.scopedTeams.length > 0) throw new ForbiddenError(PROJECT_ONLY);
  if (
    auth.scopedOrganizations.length > 0 &&
    (!organizationId || !auth.scopedOrganizations.includes(organizationId))
  )
    throw new ForbiddenError(
      `API key does not have access to the requested organization: ID ${organizationId}.`,
    );
}

function organizationIdOf(auth: AuthContext, param: string): string | undefined {
  if (param !== '@current') return param.toLowerCase();
  return auth.currentOrganizationId ?? auth.levels.keys().next().value;
}

/** 403 when the route's path names a project or organization the key does not reach. */
export function checkKeyScoping(auth: AuthContext, request: FastifyRequest): void {
  if (!isKeyScoped(auth)) return;
  const url = request.routeOptions.url ?? '';
  const params = (request.params ?? {}) as Record<string, string | undefined>;
  if (params.project_id !== undefined) {
    const teamId = projectIdOf(auth, params.project_id);
    // A malformed id is the handler's 404; a project unknown to the context is out of reach.
    if (teamId === undefined) return;
    if (!inKeyScopeProject(auth, teamId, auth.teamOrganizations.get(teamId)))
      throw new ForbiddenError(`API key does not have access to the requested project: ID ${teamId}.`);
    return;
  }
  if (ORGANIZATION_PATH.test(url) && params.id !== undefined) {
    const organizationId = organizationIdOf(auth, params.id);
    if (organizationId === undefined) return;
    if (auth.scopedTeams.length > 0 && request.method !== 'GET' && request.method !== 'HEAD')
      throw new ForbiddenError(PROJECT_ONLY);
    if (!inKeyScopeOrganization(auth, organizationId))
      throw new ForbiddenError(
        `API key does not have access to the requested organization: ID ${organizationId}.`,
      );
    return;
  }
  if (url === '/api/organizations/' && request.method === 'POST')
    throw new ForbiddenError('API keys limited to projects or organizations cannot create organizations.');
}
