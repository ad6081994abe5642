// `sett users list`, `sett keys list`, `sett projects list`: what bootstrap and the other
// commands created, read straight from Postgres; and `sett projects set` (privacy settings). Keys are listed by id and mask only (the
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
      anonymize_ips: t.anonymizeIps,
      geoip_enabled: t.geoipEnabled,
      created_at: t.createdAt.toISOString(),
    }));
  });
}

function onOff(flag: string, value: string | undefined): boolean | undefined {
  if (value === undefined) return undefined;
  if (value === 'on' || value === 'true') return true;
  if (value === 'off' || value === 'false') return false;
  throw new CliError(`${flag} must be on or off, got "${value}"`);
}

/**
 * `sett projects set`: the privacy settings of one project, as PATCH /api/projects/:id/ sets
 * them. Ingestion picks a change up within its cache time (TOKEN_CACHE_TTL_MS).
 */
export async function setProject(opts: {
  databaseUrl: string;
  id?: string;
  anonymizeIps?: string;
  geoip?: string;
}) {
  const id = Number(opts.id);
  if (!Number.isInteger(id) || id < 1)
    throw new CliError('--id must be a project id (see sett projects list)');
  const anonymizeIps = onOff('--anonymize-ips', opts.anonymizeIps);
  const geoipEnabled = onOff('--geoip', opts.geoip);
  if (anonymizeIps === undefined && geoipEnabled === undefined)
    throw new CliError('projects set needs --anonymize-ips on|off and/or --geoip on|off');
  return withPrisma(opts.databaseUrl, async (prisma) => {
    const { count } = await prisma.team.updateMany({
      where: { id, deletedAt: null },
      data: {
        ...(anonymizeIps === undefined ? {} : { anonymizeIps }),
        ...(geoipEnabled === undefined ? {} : { geoipEnabled }),
      },
    });
    if (count === 0) throw new CliError(`no project with id ${id}`);
    const t = await prisma.team.findUniqueOrThrow({ where: { id } });
    return { id: t.id, name: t.name, anonymize_ips: t.anonymizeIps, geoip_enabled: t.geoipEnabled };
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
