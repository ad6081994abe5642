// `sett keys create`: a personal API key for an existing user. The value is printed once and
// only its hash is stored.
import { createPrisma } from '@sett/db';
import { generateKeyId, generatePersonalApiKey, hashPersonalApiKey, isScope, maskKey } from '@sett/keys';

export class CliError extends Error {}

export interface CreateKeyOptions {
  databaseUrl: string;
  userUuid: string;
  scopes: string[];
  label?: string;
  /** Project ids the key is limited to (scoped_teams); none: every project of the user. */
  projects?: number[];
}

export async function createPersonalKey(
  opts: CreateKeyOptions,
): Promise<{ personal_api_key: string; scopes: string[]; scoped_teams: string }> {
  const bad = opts.scopes.filter((s) => !isScope(s));
  if (opts.scopes.length === 0) throw new CliError('--scopes is required (comma separated, or "*")');
  if (bad.length) throw new CliError(`unknown scope(s): ${bad.join(', ')}`);
  if (!/^[0-9a-f-]{36}$/i.test(opts.userUuid))
    throw new CliError(`--user must be a user uuid, got "${opts.userUuid}"`);
  const prisma = createPrisma({ databaseUrl: opts.databaseUrl });
  try {
    const user = await prisma.user.findUnique({ where: { uuid: opts.userUuid } });
    if (!user) throw new CliError(`no user with uuid ${opts.userUuid}`);
    const projects = [...new Set(opts.projects ?? [])];
    for (const id of projects) {
      const team = await prisma.team.findFirst({ where: { id, deletedAt: null } });
      if (!team) throw new CliError(`no project ${id}`);
      const member = await prisma.organizationMembership.findUnique({
        where: { organizationId_userId: { organizationId: team.organizationId, userId: user.id } },
      });
      if (!member) throw new CliError(`the user is not a member of project ${id}'s organization`);
    }
    const value = generatePersonalApiKey();
    await prisma.personalApiKey.create({
      data: {
        id: generateKeyId(),
        userId: user.id,
        label: opts.label ?? 'cli',
        secureValue: hashPersonalApiKey(value),
        maskValue: maskKey(value),
        scopes: [...new Set(opts.scopes)],
        scopedTeams: projects,
      },
    });
    return {
      personal_api_key: value,
      scopes: [...new Set(opts.scopes)],
      scoped_teams: projects.length ? projects.join(',') : 'all',
    };
  } finally {
    await prisma.$disconnect();
  }
}
