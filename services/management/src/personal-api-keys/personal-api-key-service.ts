// The authenticated user's personal API keys (/api/personal_api_keys/). The value is returned
// once, on create; only its hash is stored. A key can only mint keys with scopes it holds
// itself, and within its own project and organization limits, so a narrow key cannot escalate.
// `@current` is the calling key: how PostHog's API clients learn what they may do.
import type { PersonalApiKey, PrismaClient } from '@sett/db';
import { ForbiddenError, NotFoundError, ValidationError } from '@sett/http';
import {
  generateKeyId,
  generatePersonalApiKey,
  hasScope,
  hashPersonalApiKey,
  maskKey,
  type Scope,
} from '@sett/keys';
import type { AuthContext } from '../auth/auth-context';
import { inKeyScopeOrganization, inKeyScopeProject, isKeyScoped } from '../auth/key-scoping';
import type { Page } from '../pagination/pagination';
import type { PersonalApiKeyCreateBody } from './personal-api-key-schemas';

export function personalApiKeyJson(k: PersonalApiKey) {
  return {
    id: k.id,
    label: k.label,
    mask_value: k.maskValue,
    user_id: k.userId,
    scopes: k.scopes,
    // Empty means all. Answered as [] (not null): PostHog's own API client reads `.length` of both.
    scoped_teams: k.scopedTeams,
    scoped_organizations: k.scopedOrganizations,
    created_at: k.createdAt.toISOString(),
    last_used_at: k.lastUsedAt ? k.lastUsedAt.toISOString() : null,
  };
}

export function createPersonalApiKeyService(prisma: PrismaClient) {
  /**
   * A key is limited only to projects and organizations its user belongs to (400 naming the
   * field otherwise, PostHog's rule); a limited key mints only keys within its own limits (403).
   */
  async function checkLimits(auth: AuthContext, teams: number[], organizations: string[]) {
    const found = teams.length
      ? await prisma.team.findMany({
          where: {
            id: { in: teams },
            deletedAt: null,
            organization: { memberships: { some: { userId: auth.userId } } },
          },
          select: { id: true, organizationId: true },
        })
      : [];
    if (found.length !== teams.length)
      throw new ValidationError(
        'You must be a member of all projects that you are scoping the key to.',
        'scoped_teams',
      );
    if (organizations.length) {
      const memberships = await prisma.organizationMembership.count({
        where: { userId: auth.userId, organizationId: { in: organizations } },
      });
      if (memberships !== organizations.length)
        throw new ValidationError(
          'You must be a member of all organizations that you are scoping the key to.',
          'scoped_organizations',
        );
    }
    if (!isKeyScoped(auth)) return;
    const within =
      (teams.length > 0 || organizations.length > 0) &&
      (auth.scopedTeams.length === 0 || teams.length > 0) &&
      found.every((t) => inKeyScopeProject(auth, t.id, t.organizationId)) &&
      organizations.every((id) => auth.scopedTeams.length === 0 && inKeyScopeOrganization(auth, id));
    if (!within)
      throw new ForbiddenError(
        'A key limited to projects or organizations can only create keys within the same limits.',
      );
  }

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
      const scopedTeams = body.scoped_teams ?? [];
      const scopedOrganizations = (body.scoped_organizations ?? []).map((id) => id.toLowerCase());
      await checkLimits(auth, scopedTeams, scopedOrganizations);
      const value = generatePersonalApiKey();
      const key = await prisma.personalApiKey.create({
        data: {
          id: generateKeyId(),
          userId: auth.userId,
          label: body.label,
          secureValue: hashPersonalApiKey(value),
          maskValue: maskKey(value),
          scopes: body.scopes,
          scopedTeams,
          scopedOrganizations,
        },
      });
      return { ...personalApiKeyJson(key), value };
    },

    /** `@current` names the key making the request (PostHog's introspection). */
    async retrieve(auth: Pick<AuthContext, 'userId' | 'keyId'>, idParam: string) {
      const id = idParam === '@current' ? auth.keyId : idParam;
      const key = await prisma.personalApiKey.findFirst({ where: { id, userId: auth.userId } });
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
