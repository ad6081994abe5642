// Operator commands for accounts: `sett orgs create|list` and `sett users create|set-staff`.
// Everything they create is ordinary: an organization is always a new one (never found by its
// name), a user is never staff unless `users set-staff --on` says so. Keys are printed once and
// stored as hashes.
import { createPrisma, type Prisma, type PrismaClient } from '@sett/db';
import { createRedis, writeProjectToken } from '@sett/cache';
import {
  generateKeyId,
  generatePersonalApiKey,
  generateProjectToken,
  hashPassword,
  hashPersonalApiKey,
  isScope,
  maskKey,
} from '@sett/keys';
import { CliError } from './keys-create';
import { isUuid } from '@sett/schemas';

export const LEVEL_NAMES = { member: 1, admin: 8, owner: 15 } as const;
const EMAIL_RE = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

export interface DbOptions {
  databaseUrl: string;
}

async function withPrisma<T>(opts: DbOptions, work: (prisma: PrismaClient) => Promise<T>): Promise<T> {
  const prisma = createPrisma({ databaseUrl: opts.databaseUrl });
  try {
    return await work(prisma);
  } finally {
    await prisma.$disconnect();
  }
}

export function normaliseEmail(email: string | undefined, flag = '--email'): string {
  const e = (email ?? '').trim().toLowerCase();
  if (!EMAIL_RE.test(e)) throw new CliError(`${flag} must be an e-mail address, got "${email ?? ''}"`);
  return e;
}

/** member|admin|owner or PostHog's numbers 1|8|15. */
export function parseLevel(value: string | undefined): number {
  const v = (value ?? 'member').trim().toLowerCase();
  if (v in LEVEL_NAMES) return LEVEL_NAMES[v as keyof typeof LEVEL_NAMES];
  if (['1', '8', '15'].includes(v)) return Number(v);
  throw new CliError(`--level must be member, admin or owner (or 1, 8, 15), got "${value}"`);
}

/** A slug for a new organization: from the name, with a suffix when it is taken. */
export async function freeSlug(tx: Prisma.TransactionClient, name: string): Promise<string> {
  const base =
    name
      .toLowerCase()
      .replace(/[^a-z0-9]+/g, '-')
      .replace(/^-+|-+$/g, '')
      .slice(0, 40) || 'org';
  if (!(await tx.organization.findUnique({ where: { slug: base } }))) return base;
  return `${base}-${generateKeyId().slice(0, 8).toLowerCase()}`;
}

/** A personal API key for the user: the value once, its hash stored. */
export async function issueKey(
  tx: Prisma.TransactionClient,
  userId: number,
  label: string,
  scopes: string[] = ['*'],
): Promise<string> {
  const value = generatePersonalApiKey();
  await tx.personalApiKey.create({
    data: {
      id: generateKeyId(),
      userId,
      label,
      secureValue: hashPersonalApiKey(value),
      maskValue: maskKey(value),
      scopes,
    },
  });
  return value;
}

/** A new project in the organization (project_id = id, set by the teams trigger). */
export async function createProject(tx: Prisma.TransactionClient, organizationId: string, name: string) {
  return tx.team.create({ data: { organizationId, name, apiToken: generateProjectToken() } });
}

export interface OrgCreateOptions extends DbOptions {
  redisUrl: string;
  name?: string;
  ownerEmail?: string;
  projectName?: string;
}

/**
 * `sett orgs create`: a new organization with a first project, owned by the user with that
 * e-mail (created as an ordinary user when there is none; only then is a personal key issued).
 */
export async function createOrganization(opts: OrgCreateOptions) {
  const name = (opts.name ?? '').trim();
  if (!name || name.length > 64) throw new CliError('--name is required (at most 64 characters)');
  const email = normaliseEmail(opts.ownerEmail, '--owner-email');
  const result = await withPrisma(opts, (prisma) =>
    prisma.$transaction(async (tx) => {
      const org = await tx.organization.create({ data: { name, slug: await freeSlug(tx, name) } });
      const team = await createProject(tx, org.id, opts.projectName ?? 'Default project');
      let user = await tx.user.findFirst({ where: { email: { equals: email, mode: 'insensitive' } } });
      const created = !user;
      user ??= await tx.user.create({
        data: { email, distinctId: generateKeyId(), currentOrganizationId: org.id, currentTeamId: team.id },
      });
      await tx.organizationMembership.create({
        data: { organizationId: org.id, userId: user.id, level: 15 },
      });
      const key = created ? await issueKey(tx, user.id, 'sett orgs create') : null;
      return { org, team, user, key };
    }),
  );
  await publishToken(opts.redisUrl, result.team);
  return {
    organization_id: result.org.id,
    organization_slug: result.org.slug,
    project_id: result.team.id,
    project_api_key: result.team.apiToken,
    owner_uuid: result.user.uuid,
    owner_email: result.user.email,
    personal_api_key: result.key,
  };
}

export interface ProjectCreateOptions extends DbOptions {
  redisUrl: string;
  name?: string;
  org?: string;
  timezone?: string;
}

/** Whether Intl knows the IANA time zone (what the query engine buckets days in). */
function validTimeZone(tz: string): boolean {
  try {
    new Intl.DateTimeFormat('en', { timeZone: tz });
    return true;
  } catch {
    return false;
  }
}

/** `sett projects create`: a new project in an organization (by id or slug), with its own key. */
export async function createProjectCommand(opts: ProjectCreateOptions) {
  const name = (opts.name ?? '').trim();
  if (!name || name.length > 200) throw new CliError('--name is required (at most 200 characters)');
  if (!opts.org) throw new CliError('--org is required (an organization id or slug, see `sett orgs list`)');
  const timezone = (opts.timezone ?? 'UTC').trim();
  if (!validTimeZone(timezone))
    throw new CliError(`--timezone must be an IANA time zone such as Europe/Berlin; got "${timezone}"`);
  const orgRef = opts.org.trim();
  const team = await withPrisma(opts, async (prisma) => {
    const org = await prisma.organization.findFirst({
      where: isUuid(orgRef) ? { id: orgRef.toLowerCase() } : { slug: orgRef },
    });
    if (!org) throw new CliError(`no organization with id or slug "${orgRef}"`);
    return prisma.team.create({
      data: { organizationId: org.id, name, timezone, apiToken: generateProjectToken() },
    });
  });
  await publishToken(opts.redisUrl, team);
  return {
    project_id: team.id,
    project_api_key: team.apiToken,
    organization_id: team.organizationId,
    name: team.name,
    timezone: team.timezone,
  };
}

async function publishToken(
  redisUrl: string,
  team: { id: number; apiToken: string; organizationId: string },
) {
  const redis = createRedis({ url: redisUrl, name: 'sett-cli' });
  try {
    await writeProjectToken(redis, team.apiToken, { teamId: team.id, organizationId: team.organizationId });
  } catch {
    // Only a cache: capture and decide read the token from Postgres on a miss.
  } finally {
    redis.disconnect();
  }
}

/** `sett orgs list`: every organization with its member and project counts. */
export async function listOrganizations(opts: DbOptions) {
  return withPrisma(opts, async (prisma) => {
    const orgs = await prisma.organization.findMany({
      orderBy: [{ createdAt: 'asc' }, { id: 'asc' }],
      include: {
        _count: { select: { memberships: true } },
        teams: { where: { deletedAt: null }, select: { id: true } },
      },
    });
    return orgs.map((o) => ({
      id: o.id,
      name: o.name,
      slug: o.slug,
      members: o._count.memberships,
      projects: o.teams.length,
      created_at: o.createdAt.toISOString(),
    }));
  });
}

export interface UserCreateOptions extends DbOptions {
  email?: string;
  org?: string;
  level?: string;
  firstName?: string;
  scopes?: string;
  /** A password to sign in to the console with (read by password-input.ts, never an argument). */
  password?: string;
}

/** `sett users create`: an ordinary user in an organization (by id or slug), with a personal key. */
export async function createUser(opts: UserCreateOptions) {
  const email = normaliseEmail(opts.email);
  const level = parseLevel(opts.level);
  const scopes = (opts.scopes ?? '*')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  const bad = scopes.filter((s) => !isScope(s));
  if (scopes.length === 0 || bad.length)
    throw new CliError(`unknown scope(s): ${bad.join(', ') || '(none)'}`);
  if (!opts.org) throw new CliError('--org is required (an organization id or slug, see `sett orgs list`)');
  const orgRef = opts.org.trim();
  const passwordHash = opts.password === undefined ? null : await hashPassword(opts.password);
  return withPrisma(opts, (prisma) =>
    prisma.$transaction(async (tx) => {
      const org = await tx.organization.findFirst({
        where: isUuid(orgRef) ? { id: orgRef.toLowerCase() } : { slug: orgRef },
      });
      if (!org) throw new CliError(`no organization with id or slug "${orgRef}"`);
      if (await tx.user.findFirst({ where: { email: { equals: email, mode: 'insensitive' } } }))
        throw new CliError(`a user with e-mail ${email} exists already (add it with the members API)`);
      const team = await tx.team.findFirst({
        where: { organizationId: org.id, deletedAt: null },
        orderBy: { id: 'asc' },
      });
      const user = await tx.user.create({
        data: {
          email,
          distinctId: generateKeyId(),
          firstName: opts.firstName ?? '',
          password: passwordHash,
          currentOrganizationId: org.id,
          currentTeamId: team?.id ?? null,
        },
      });
      await tx.organizationMembership.create({ data: { organizationId: org.id, userId: user.id, level } });
      const key = await issueKey(tx, user.id, 'sett users create', [...new Set(scopes)]);
      return {
        user_uuid: user.uuid,
        email: user.email,
        organization_id: org.id,
        level,
        personal_api_key: key,
        scopes: [...new Set(scopes)],
      };
    }),
  );
}

/** `sett users set-password`: a new password for signing in; the user's browser sessions end. */
export async function setPassword(opts: DbOptions & { email?: string; password: string }) {
  const email = normaliseEmail(opts.email);
  const hash = await hashPassword(opts.password);
  return withPrisma(opts, async (prisma) => {
    const user = await prisma.user.findFirst({ where: { email: { equals: email, mode: 'insensitive' } } });
    if (!user) throw new CliError(`no user with e-mail ${email}`);
    const [, ended] = await prisma.$transaction([
      prisma.user.update({ where: { id: user.id }, data: { password: hash } }),
      prisma.userSession.deleteMany({ where: { userId: user.id } }),
    ]);
    return { user_uuid: user.uuid, email: user.email, password_set: true, sessions_ended: ended.count };
  });
}

/** `sett users set-staff --on|--off`: staff are instance admins (every account, every user). */
export async function setStaff(opts: DbOptions & { email?: string; on: boolean }) {
  const email = normaliseEmail(opts.email);
  return withPrisma(opts, async (prisma) => {
    const user = await prisma.user.findFirst({ where: { email: { equals: email, mode: 'insensitive' } } });
    if (!user) throw new CliError(`no user with e-mail ${email}`);
    const updated = await prisma.user.update({ where: { id: user.id }, data: { isStaff: opts.on } });
    return { user_uuid: updated.uuid, email: updated.email, is_staff: updated.isStaff };
  });
}
