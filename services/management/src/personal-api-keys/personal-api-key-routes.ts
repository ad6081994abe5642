// /api/personal_api_keys/: the authenticated user's keys. List/retrieve need
// personal_api_key:read, create/delete personal_api_key:write. The value is returned once, on
// create; only its hash is stored. A key can only mint keys with scopes it holds itself, so a
// narrow key cannot escalate to '*'.
import express, { type Router } from 'express';
import type { PersonalApiKey, PrismaClient } from '@sett/db';
import { ForbiddenError, NotFoundError } from '@sett/http';
import {
  generateKeyId,
  generatePersonalApiKey,
  hasScope,
  hashPersonalApiKey,
  maskKey,
  type Scope,
} from '@sett/keys';
import { authOf, requireScope } from '../auth/auth-context';
import { envelope, pageRequestInfo, parsePage } from '../pagination/pagination';
import { validateBody } from '../validate';
import { validatePersonalApiKeyCreate } from './personal-api-key-schemas';

export function personalApiKeyJson(k: PersonalApiKey) {
  return {
    id: k.id,
    label: k.label,
    mask_value: k.maskValue,
    scopes: k.scopes,
    created_at: k.createdAt.toISOString(),
    last_used_at: k.lastUsedAt ? k.lastUsedAt.toISOString() : null,
  };
}

export function personalApiKeyRoutes(deps: {
  prisma: PrismaClient;
  publicUrl?: string;
  onKeyDeleted?: () => void;
}): Router {
  const { prisma, publicUrl, onKeyDeleted } = deps;
  const router = express.Router();
  const BASE = '/api/personal_api_keys/';

  router.get(BASE, async (req, res) => {
    const auth = authOf(res);
    requireScope(auth, 'personal_api_key:read');
    const page = parsePage(req.query);
    const where = { userId: auth.userId };
    const [count, keys] = await Promise.all([
      prisma.personalApiKey.count({ where }),
      prisma.personalApiKey.findMany({
        where,
        orderBy: [{ createdAt: 'desc' }, { id: 'asc' }],
        skip: page.offset,
        take: page.limit,
      }),
    ]);
    res.json(envelope(pageRequestInfo(req, publicUrl), page, count, keys.map(personalApiKeyJson)));
  });

  router.post(BASE, async (req, res) => {
    const auth = authOf(res);
    requireScope(auth, 'personal_api_key:write');
    const body = validateBody(validatePersonalApiKeyCreate, req.body);
    const beyond = body.scopes.find((s) => !hasScope(auth.scopes, s as Scope));
    if (beyond)
      throw new ForbiddenError(
        `Cannot create a key with scope '${beyond}': the key making the request does not hold it.`,
      );
    const value = generatePersonalApiKey();
    const key = await prisma.personalApiKey.create({
      data: {
        id: generateKeyId(),
        userId: auth.userId,
        label: body.label,
        secureValue: hashPersonalApiKey(value),
        maskValue: maskKey(value),
        scopes: body.scopes,
      },
    });
    res.status(201).json({ ...personalApiKeyJson(key), value });
  });

  router.get(`${BASE}:id/`, async (req, res) => {
    const auth = authOf(res);
    requireScope(auth, 'personal_api_key:read');
    const key = await prisma.personalApiKey.findFirst({ where: { id: req.params.id, userId: auth.userId } });
    if (!key) throw new NotFoundError();
    res.json(personalApiKeyJson(key));
  });

  router.delete(`${BASE}:id/`, async (req, res) => {
    const auth = authOf(res);
    requireScope(auth, 'personal_api_key:write');
    const { count } = await prisma.personalApiKey.deleteMany({
      where: { id: req.params.id, userId: auth.userId },
    });
    if (count === 0) throw new NotFoundError();
    onKeyDeleted?.();
    res.status(204).end();
  });

  return router;
}
