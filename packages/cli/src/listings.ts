// `sett users list`, `sett keys list`, `sett projects list`: what bootstrap and the other
// commands created, read straight from Postgres. Keys are listed by id and mask only (the
// value is never stored; its hash is not shown either). Each listing is a JSON-ready array;
// `formatTable` renders it for a terminal.
import { createPrisma, type PrismaClient } from '@sett/db';
import { CliError } from './keys-create';

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

async function withPrisma<T>(databaseUrl: string, work: (prisma: PrismaClient) => Promise<T>): Promise<T> {
  const prisma = createPrisma({ databaseUrl });
  try {
    return await work(prisma);
  } finally {
    await prisma.$disconnect();
  }
}

export async function listUsers(opts: { databaseUrl: string }) {
  return withPrisma(opts.databaseUrl, async (prisma) => {
    const users = await prisma.user.findMany({
      orderBy: [{ dateJoined: 'asc' }, { id: 'asc' }],
      include: {
        memberships: { include: { organization: { select: { id: true, slug: true } } } },
        _count: { select: { personalApiKeys: true } },
      },
    });
    return users.map((u) => ({
      uuid: u.uuid,
      email: u.email,
      first_name: u.firstName,
      is_staff: u.isStaff,
      is_active: u.isActive,
      organizations: u.memberships.map((m) => ({
        id: m.organization.id,
        slug: m.organization.slug,
        level: m.level,
      })),
      personal_api_keys: u._count.personalApiKeys,
      date_joined: u.dateJoined.toISOString(),
    }));
  });
}

export async function listKeys(opts: { databaseUrl: string; userUuid?: string }) {
  if (opts.userUuid !== undefined && !UUID_RE.test(opts.userUuid))
    throw new CliError(`--user must be a user uuid (see sett users list), got "${opts.userUuid}"`);
  return withPrisma(opts.databaseUrl, async (prisma) => {
    const keys = await prisma.personalApiKey.findMany({
      where: opts.userUuid ? { user: { uuid: opts.userUuid.toLowerCase() } } : {},
      orderBy: [{ createdAt: 'asc' }, { id: 'asc' }],
      include: { user: { select: { uuid: true, email: true } } },
    });
    return keys.map((k) => ({
      id: k.id,
      user_uuid: k.user.uuid,
      user_email: k.user.email,
      label: k.label,
      mask_value: k.maskValue,
      scopes: k.scopes,
      created_at: k.createdAt.toISOString(),
      last_used_at: k.lastUsedAt?.toISOString() ?? null,
    }));
  });
}

export async function listProjects(opts: { databaseUrl: string; org?: string }) {
  return withPrisma(opts.databaseUrl, async (prisma) => {
    const org = opts.org?.trim();
    const teams = await prisma.team.findMany({
      where: {
        deletedAt: null,
        ...(org ? { organization: UUID_RE.test(org) ? { id: org.toLowerCase() } : { slug: org } } : {}),
      },
      orderBy: { id: 'asc' },
      include: { organization: { select: { id: true, slug: true } } },
    });
    return teams.map((t) => ({
      id: t.id,
      uuid: t.uuid,
      name: t.name,
      // Public by design: SDKs send it with every event.
      api_token: t.apiToken,
      organization_id: t.organization.id,
      organization_slug: t.organization.slug,
      ingested_event: t.ingestedEvent,
      created_at: t.createdAt.toISOString(),
    }));
  });
}

/** Left-aligned columns under an upper-case header; the last column is not padded. */
export function formatTable(header: string[], rows: Array<Array<string | number | boolean | null>>): string {
  const cells = [header, ...rows.map((r) => r.map((c) => (c === null ? '-' : String(c))))];
  const widths = header.map((_, i) => Math.max(...cells.map((r) => (r[i] ?? '').length)));
  return cells
    .map((r) =>
      r
        .map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i]!)))
        .join('  ')
        .trimEnd(),
    )
    .map((l) => `${l}\n`)
    .join('');
}
