// `sett bootstrap`: an organization, a project, its owner and an all-scopes personal API key.
// Idempotent on the user's email: a second run finds the same organization, project and user,
// and issues a fresh personal key (stored keys cannot be shown again). Only the first user of an
// empty instance is made staff (the operator `pnpm start` bootstraps); anyone else bootstrapped
// is an ordinary user. A new user always gets a new organization: an existing organization is
// never joined because it has the same name (staff add members through the members API).
import { createPrisma } from '@sett/db';
import { createRedis, writeProjectToken } from '@sett/cache';
import { randomBytes } from 'node:crypto';
import { generateKeyId, hashPassword } from '@sett/keys';
import { createProject, freeSlug, issueKey } from './accounts';

export interface BootstrapOptions {
  databaseUrl: string;
  redisUrl: string;
  email?: string;
  organizationName?: string;
  projectName?: string;
  /** For `pnpm start`: do nothing (and issue no key) when any user exists already. */
  onlyIfEmpty?: boolean;
  /** For `pnpm start`: a new user gets a random password to sign in to the console with. */
  consolePassword?: boolean;
}

export interface BootstrapResult {
  created: boolean;
  organization_id: string;
  project_id: number;
  project_api_key: string;
  personal_api_key: string | null;
  user_uuid: string;
  email: string;
  /** Only when the user was created with `consolePassword`: shown once, stored hashed. */
  console_password?: string;
}

const OWNER_LEVEL = 15;

/** 20 characters from a 32-letter alphabet without look-alikes: 100 bits. */
function newPassword(): string {
  const alphabet = 'abcdefghjkmnpqrstuvwxyz23456789A';
  return [...randomBytes(20)].map((b) => alphabet[b % 32]).join('');
}

export async function bootstrap(opts: BootstrapOptions): Promise<BootstrapResult> {
  const prisma = createPrisma({ databaseUrl: opts.databaseUrl });
  const redis = createRedis({ url: opts.redisUrl, name: 'sett-cli' });
  try {
    const email = (opts.email ?? 'admin@sett.local').toLowerCase();
    const orgName = opts.organizationName ?? 'Default Organization';
    const projectName = opts.projectName ?? 'Default Project';

    if (opts.onlyIfEmpty && (await prisma.user.count()) > 0) {
      const team = await prisma.team.findFirst({ orderBy: { id: 'asc' } });
      const user = await prisma.user.findFirst({ orderBy: { id: 'asc' } });
      if (team && user) {
        await writeProjectToken(redis, team.apiToken, {
          teamId: team.id,
          organizationId: team.organizationId,
        });
        return {
          created: false,
          organization_id: team.organizationId,
          project_id: team.id,
          project_api_key: team.apiToken,
          personal_api_key: null,
          user_uuid: user.uuid,
          email: user.email,
        };
      }
    }

    // Hashed before the transaction (a slow hash), used only if the user is new.
    const password = opts.consolePassword ? newPassword() : undefined;
    const passwordHash = password ? await hashPassword(password) : null;
    const result = await prisma.$transaction(async (tx) => {
      let created = false;
      let passwordSet = false;
      let user = await tx.user.findUnique({ where: { email } });
      // Staff only for the very first user of the instance.
      const firstUser = !user && (await tx.user.count()) === 0;
      let organizationId = user?.currentOrganizationId ?? null;
      if (!organizationId) {
        const org = await tx.organization.create({
          data: { name: orgName, slug: await freeSlug(tx, orgName) },
        });
        organizationId = org.id;
        created = true;
      }
      let team = await tx.team.findFirst({
        where: user?.currentTeamId
          ? { id: user.currentTeamId, deletedAt: null }
          : { organizationId, name: projectName, deletedAt: null },
      });
      if (!team) {
        team = await createProject(tx, organizationId, projectName);
        created = true;
      }
      if (!user) {
        user = await tx.user.create({
          data: {
            email,
            distinctId: generateKeyId(),
            firstName: 'Admin',
            isStaff: firstUser,
            isEmailVerified: true,
            password: passwordHash,
            currentOrganizationId: organizationId,
            currentTeamId: team.id,
          },
        });
        created = true;
        passwordSet = passwordHash !== null;
      }
      await tx.organizationMembership.upsert({
        where: { organizationId_userId: { organizationId, userId: user.id } },
        update: {},
        create: { organizationId, userId: user.id, level: OWNER_LEVEL },
      });
      const value = await issueKey(tx, user.id, `bootstrap ${new Date().toISOString()}`);
      return { created, organizationId, team, user, value, passwordSet };
    });

    await writeProjectToken(redis, result.team.apiToken, {
      teamId: result.team.id,
      organizationId: result.organizationId,
    });
    return {
      created: result.created,
      organization_id: result.organizationId,
      project_id: result.team.id,
      project_api_key: result.team.apiToken,
      personal_api_key: result.value,
      user_uuid: result.user.uuid,
      email: result.user.email,
      ...(result.passwordSet ? { console_password: password } : {}),
    };
  } finally {
    await prisma.$disconnect();
    redis.disconnect();
  }
}
