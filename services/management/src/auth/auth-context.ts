// Who is calling: the personal API key's owner, its scopes and its memberships (organization
// levels and reachable projects), put on res.locals by the auth middleware and read by every
// handler through authOf(). Cached with the key lookup for a few seconds (see auth-middleware):
// read paths decide visibility from it without a query; write paths re-check against the
// database.
import type { Response } from 'express';
import { ForbiddenError, SettError } from '@sett/http';
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
  /** The user's current project (users.current_team_id), what `@current` names; null if unset. */
  currentTeamId?: number | null;
}

export function authOf(res: Response): AuthContext {
  const auth = res.locals.auth as AuthContext | undefined;
  if (!auth) throw new SettError(500, 'server_error', 'error', 'authentication middleware missing');
  return auth;
}

/** 403 naming the missing scope, PostHog's wording. */
export function requireScope(auth: AuthContext, scope: Scope): void {
  if (!hasScope(auth.scopes, scope)) {
    throw new ForbiddenError(`API key missing required scope '${scope}'`, 'permission_denied');
  }
}
