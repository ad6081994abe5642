// Who is calling: the personal API key's owner and scopes, put on res.locals by the auth
// middleware and read by every handler through authOf().
import type { Response } from 'express';
import { ForbiddenError, SettError } from '@sett/http';
import { hasScope, type Scope } from '@sett/keys';

export interface AuthContext {
  keyId: string;
  userId: number;
  isStaff: boolean;
  scopes: readonly string[];
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
