// Who is calling: the personal API key's owner, its scopes and its memberships (organization
// levels and reachable projects), what the personal-key authenticator (authenticators.ts) puts
// on every request of a `personal_key` route and handlers receive as `auth`. Cached with the
// key lookup for a few seconds (see auth-middleware): read paths decide visibility from it
// without a query; write paths re-check against the database.
import { ForbiddenError } from '@sett/http';
import { hasScope, type Scope } from '@sett/keys';

export interface AuthContext {
  keyId: string;
  userId: number;
  isStaff: boolean;
  scopes: readonly string[];
  /** organization id -> the user's membership level, at lookup time */
  levels: ReadonlyMap<string, number>;
  /** ids of the projects (teams) of those organizations, at lookup time */
  teamIds: ReadonlySet<number>;
  /** project id -> its organization id, for the same projects */
  teamOrganizations: ReadonlyMap<number, string>;
  /** The user's current project (users.current_team_id), what `@current` names; null if unset. */
  currentTeamId?: number | null;
  /** The user's current organization (users.current_organization_id); null if unset. */
  currentOrganizationId?: string | null;
  /** The projects and organizations the key is limited to; empty: all (key-scoping.ts). */
  scopedTeams: readonly number[];
  scopedOrganizations: readonly string[];
  /** Set when the caller is a browser session (sessions/), not a key. */
  sessionId?: string;
}

/** 403 naming the missing scope, PostHog's wording. Called by the route mechanism only. */
export function checkScope(scopes: readonly string[], scope: string | null): void {
  if (scope !== null && !hasScope(scopes, scope as Scope)) {
    throw new ForbiddenError(`API key missing required scope '${scope}'`, 'permission_denied');
  }
}
