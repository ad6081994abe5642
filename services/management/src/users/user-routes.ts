// /api/users/: list, retrieve (uuid or @me), PATCH, DELETE and the sub-resources. Scopes:
// reads user:read; every write and every sub-resource user:write, except the read-only
// hedgehog_config GET (user:read). start_2fa_setup is a GET but creates a secret: user:write.
// Reads decide visibility from the cached key context (viewerOf); writes re-load the caller's
// memberships (loadViewer) and clear the key cache, since they may change is_staff or users.
import express, { type Router } from 'express';
import type { PrismaClient } from '@sett/db';
import { MethodNotAllowedError, ValidationError } from '@sett/http';
import { authOf, requireScope } from '../auth/auth-context';
import { envelope, pageRequestInfo, parsePage } from '../pagination/pagination';
import { MAX_INT4, parseIntId, validateBody } from '../validate';
import {
  validateHedgehogConfig,
  validateScenePersonalisation,
  validateUserUpdate,
  validateValidate2fa,
} from './user-schemas';
import type { UserService } from './user-service';
import { loadViewer, viewerOf } from './viewer';

export interface UserRoutesDeps {
  prisma: PrismaClient;
  users: UserService;
  publicUrl?: string;
  /** Called after a user is changed or deleted (drops cached key lookups and contexts). */
  onUserChanged?: () => void;
}

/** `true`/`1`/`True` or `false`/`0`/`False`; absent or empty is undefined; anything else 400. */
export function parseBooleanQuery(raw: unknown, name: string): boolean | undefined {
  if (raw === undefined || raw === '') return undefined;
  if (raw === 'true' || raw === '1' || raw === 'True') return true;
  if (raw === 'false' || raw === '0' || raw === 'False') return false;
  throw new ValidationError(`${name} must be true or false.`, name, 'invalid_input');
}

function only(router: Router, path: string, methods: string[]) {
  router.all(path, (req) => {
    throw new MethodNotAllowedError(req.method, methods);
  });
}

export function userRoutes({ prisma, users, publicUrl, onUserChanged }: UserRoutesDeps): Router {
  const router = express.Router();

  router.get('/api/users/', async (req, res) => {
    const auth = authOf(res);
    requireScope(auth, 'user:read');
    const page = parsePage(req.query);
    const isStaff = parseBooleanQuery(req.query.is_staff, 'is_staff');
    const { count, results } = await users.list(viewerOf(auth), page, isStaff);
    res.json(envelope(pageRequestInfo(req, publicUrl), page, count, results));
  });
  only(router, '/api/users/', ['GET']);

  router.get('/api/users/:id/', async (req, res) => {
    const auth = authOf(res);
    requireScope(auth, 'user:read');
    res.json(await users.retrieve(viewerOf(auth), req.params.id));
  });
  router.patch('/api/users/:id/', async (req, res) => {
    const auth = authOf(res);
    requireScope(auth, 'user:write');
    const body = validateBody(validateUserUpdate, req.body);
    if (body.set_current_team !== undefined && parseIntId(String(body.set_current_team)) === undefined)
      throw new ValidationError(
        `set_current_team must be a project id between 1 and ${MAX_INT4}.`,
        'set_current_team',
        'invalid_input',
      );
    const updated = await users.update(await loadViewer(prisma, auth), req.params.id, body);
    onUserChanged?.();
    res.json(updated);
  });
  router.delete('/api/users/:id/', async (req, res) => {
    const auth = authOf(res);
    requireScope(auth, 'user:write');
    await users.remove(await loadViewer(prisma, auth), req.params.id);
    onUserChanged?.();
    res.status(204).end();
  });
  only(router, '/api/users/:id/', ['GET', 'PATCH', 'DELETE']);

  router.get('/api/users/:id/hedgehog_config/', async (req, res) => {
    const auth = authOf(res);
    requireScope(auth, 'user:read');
    res.json(await users.hedgehogConfig(viewerOf(auth), req.params.id));
  });
  router.patch('/api/users/:id/hedgehog_config/', async (req, res) => {
    const auth = authOf(res);
    requireScope(auth, 'user:write');
    const body = validateBody(validateHedgehogConfig, req.body);
    res.json(await users.updateHedgehogConfig(await loadViewer(prisma, auth), req.params.id, body));
  });
  only(router, '/api/users/:id/hedgehog_config/', ['GET', 'PATCH']);

  router.post('/api/users/:id/scene_personalisation/', async (req, res) => {
    const auth = authOf(res);
    requireScope(auth, 'user:write');
    const body = validateBody(validateScenePersonalisation, req.body);
    res.json(await users.addScenePersonalisation(await loadViewer(prisma, auth), req.params.id, body));
  });
  only(router, '/api/users/:id/scene_personalisation/', ['POST']);

  router.get('/api/users/:id/start_2fa_setup/', async (req, res) => {
    const auth = authOf(res);
    requireScope(auth, 'user:write');
    res.json(await users.start2faSetup(await loadViewer(prisma, auth), req.params.id));
  });
  only(router, '/api/users/:id/start_2fa_setup/', ['GET']);

  router.post('/api/users/:id/validate_2fa/', async (req, res) => {
    const auth = authOf(res);
    requireScope(auth, 'user:write');
    const body = validateBody(validateValidate2fa, req.body);
    res.json(await users.validate2fa(await loadViewer(prisma, auth), req.params.id, body.token));
  });
  only(router, '/api/users/:id/validate_2fa/', ['POST']);

  router.post('/api/users/:id/two_factor_backup_codes/', async (req, res) => {
    const auth = authOf(res);
    requireScope(auth, 'user:write');
    res.json(await users.regenerateBackupCodes(await loadViewer(prisma, auth), req.params.id));
  });
  only(router, '/api/users/:id/two_factor_backup_codes/', ['POST']);

  return router;
}
