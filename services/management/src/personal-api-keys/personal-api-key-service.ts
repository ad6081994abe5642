// The authenticated user's personal API keys (/api/personal_api_keys/, routes.ts). The value is
// returned once, on create; only its hash is stored. A key can only mint keys with scopes it
// holds itself, so a narrow key cannot escalate to '*'.
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
import type { AuthContext } from '../auth/auth-context';
import type { Page } from '../pagination/pagination';
import type { PersonalApiKeyCreateBody } from './personal-api-key-schemas';

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

export function createPersonalApiKeyService(prisma: PrismaClient) {
  return {
    async list(userId: number, page: Page) {
      const where = { userId };
      const [count, keys] = await Promise.all([
        prisma.personalApiKey.count({ where }),
        prisma.personalApiKey.findMany({
          where,
          orderBy: [{ createdAt: 'desc' }, { id: 'asc' }],
          skip: page.offset,
          take: page.limit,
        }),
      ]);
      return { count, results: keys.map(personalApiKeyJson) };
    },

    async create(auth: AuthContext, body: PersonalApiKeyCreateBody) {
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
      return { ...personalApiKeyJson(key), value };
    },

    async retrieve(userId: number, id: string) {
      const key = await prisma.personalApiKey.findFirst({ where: { id, userId } });
      if (!key) throw new NotFoundError();
      return personalApiKeyJson(key);
    },

    async remove(userId: number, id: string) {
      const { count } = await prisma.personalApiKey.deleteMany({ where: { id, userId } });
      if (count === 0) throw new NotFoundError();
    },
  };
}

export type PersonalApiKeyService = ReturnType<typeof createPersonalApiKeyService>;
