// Saved insights (PostHog's Insight): a query node with a name, description and tags, on any
// number of dashboards (a tile each). The query is checked as /query/ checks it before it is
// saved, so a saved insight always names something Sett can compute. Soft-deleted: PATCH
// `deleted: true`, as PostHog has it. Results come from insight-results.ts.
import { randomBytes } from 'node:crypto';
import type { Prisma, PrismaClient } from '@sett/db';
import { NotFoundError, ValidationError } from '@sett/http';
import type { Page } from '../pagination/pagination';
import { userBasicJson } from '../users/user-basic';
import type { InsightResult } from './insight-results';

const ALPHABET = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789';

function shortId(): string {
  let out = '';
  for (const b of randomBytes(16)) if (b < 248 && out.length < 8) out += ALPHABET[b % 62];
  return out.length === 8 ? out : shortId();
}

export const insightInclude = {
  createdBy: true,
  lastModifiedBy: true,
  team: { select: { timezone: true } },
  tiles: { where: { deleted: false }, include: { dashboard: { select: { id: true, deleted: true } } } },
} as const;

export type InsightWithRelations = Prisma.InsightGetPayload<{ include: typeof insightInclude }>;

export interface InsightWrite {
  name?: string | null;
  derived_name?: string | null;
  description?: string | null;
  query?: Record<string, unknown> | null;
  filters?: Record<string, unknown>;
  tags?: string[];
  favorited?: boolean;
  saved?: boolean;
  deleted?: boolean;
  dashboards?: number[];
}

export interface InsightListFilters {
  saved?: boolean;
  favorited?: boolean;
  search?: string;
  short_id?: string;
  created_by?: number;
}

/** PostHog's insight object; `basic` leaves the result and its fields out. */
export function insightJson(i: InsightWithRelations, result: InsightResult | undefined) {
  const liveTiles = i.tiles.filter((t) => !t.dashboard.deleted);
  const base = {
    id: i.id,
    short_id: i.shortId,
    name: i.name,
    derived_name: i.derivedName,
    query: i.query,
    filters: {},
    order: null,
    deleted: i.deleted,
    dashboards: liveTiles.map((t) => t.dashboardId),
    dashboard_tiles: liveTiles.map((t) => ({ id: t.id, dashboard_id: t.dashboardId, deleted: false })),
    description: i.description,
    tags: i.tags,
    favorited: i.favorited,
    saved: i.saved,
    created_at: i.createdAt.toISOString(),
    created_by: userBasicJson(i.createdBy),
    updated_at: i.lastModifiedAt.toISOString(),
    last_modified_at: i.lastModifiedAt.toISOString(),
    last_modified_by: userBasicJson(i.lastModifiedBy),
    is_sample: false,
    effective_restriction_level: 21,
    effective_privilege_level: 37,
    user_access_level: 'editor',
    timezone: i.team.timezone,
  };
  if (!result) return base;
  return { ...base, ...result, hogql: null };
}

export type InsightJson = ReturnType<typeof insightJson>;

export function createInsightService(prisma: PrismaClient) {
  /** The project's live dashboards among `ids`, or a 400 naming `dashboards`. */
  async function checkDashboards(teamId: number, ids: number[]) {
    const unique = [...new Set(ids)];
    const found = await prisma.dashboard.count({ where: { teamId, deleted: false, id: { in: unique } } });
    if (found !== unique.length)
      throw new ValidationError('dashboards names a dashboard this project does not have.', 'dashboards');
    return unique;
  }

  /** Puts the insight on exactly these dashboards: new tiles, removed tiles marked deleted. */
  async function placeOn(tx: Prisma.TransactionClient, insightId: number, dashboards: number[]) {
    await tx.dashboardTile.updateMany({
      where: { insightId, deleted: false, dashboardId: { notIn: dashboards } },
      data: { deleted: true, lastModifiedAt: new Date() },
    });
    const present = await tx.dashboardTile.findMany({
      where: { insightId, deleted: false },
      select: { dashboardId: true },
    });
    const have = new Set(present.map((t) => t.dashboardId));
    const missing = dashboards.filter((d) => !have.has(d));
    if (missing.length)
      await tx.dashboardTile.createMany({ data: missing.map((dashboardId) => ({ dashboardId, insightId })) });
  }

  function checkFilters(filters: Record<string, unknown> | undefined) {
    if (filters && Object.keys(filters).length > 0)
      throw new ValidationError(
        'filters (legacy insight filters) are not served by Sett: describe the insight with query.',
        'filters',
      );
  }

  async function load(teamId: number, id: number): Promise<InsightWithRelations> {
    const insight = await prisma.insight.findFirst({
      where: { id, teamId, deleted: false },
      include: insightInclude,
    });
    if (!insight) throw new NotFoundError();
    return insight;
  }

  return {
    load,

    async list(teamId: number, filters: InsightListFilters, page: Page) {
      const where: Prisma.InsightWhereInput = { teamId, deleted: false };
      if (filters.saved !== undefined) where.saved = filters.saved;
      if (filters.favorited !== undefined) where.favorited = filters.favorited;
      if (filters.short_id !== undefined) where.shortId = filters.short_id;
      if (filters.created_by !== undefined) where.createdById = filters.created_by;
      if (filters.search)
        where.AND = filters.search
          .split(/\s+/)
          .filter(Boolean)
          .map((term) => ({
            OR: [
              { name: { contains: term, mode: 'insensitive' as const } },
              { derivedName: { contains: term, mode: 'insensitive' as const } },
              { description: { contains: term, mode: 'insensitive' as const } },
            ],
          }));
      const [count, insights] = await Promise.all([
        prisma.insight.count({ where }),
        prisma.insight.findMany({
          where,
          include: insightInclude,
          orderBy: [{ lastModifiedAt: 'desc' }, { id: 'desc' }],
          skip: page.offset,
          take: page.limit,
        }),
      ]);
      return { count, insights };
    },

    async create(teamId: number, userId: number, body: InsightWrite) {
      checkFilters(body.filters);
      const dashboards = body.dashboards ? await checkDashboards(teamId, body.dashboards) : [];
      for (let attempt = 0; ; attempt++) {
        try {
          const id = await prisma.$transaction(async (tx) => {
            const insight = await tx.insight.create({
              data: {
                teamId,
                shortId: shortId(),
                name: body.name ?? null,
                derivedName: body.derived_name ?? null,
                description: body.description ?? '',
                query: (body.query ?? undefined) as Prisma.InputJsonValue | undefined,
                tags: body.tags ?? [],
                favorited: body.favorited ?? false,
                saved: body.saved ?? false,
                createdById: userId,
                lastModifiedById: userId,
              },
            });
            if (dashboards.length) await placeOn(tx, insight.id, dashboards);
            return insight.id;
          });
          return load(teamId, id);
        } catch (error) {
          // Another insight took the short id (1 in 62^8 per pair): draw again.
          if ((error as { code?: string }).code === 'P2002' && attempt < 3) continue;
          throw error;
        }
      }
    },

    async update(teamId: number, id: number, userId: number, body: InsightWrite) {
      checkFilters(body.filters);
      const existing = await prisma.insight.findFirst({
        where: { id, teamId, deleted: false },
        select: { id: true },
      });
      if (!existing) throw new NotFoundError();
      const dashboards = body.dashboards ? await checkDashboards(teamId, body.dashboards) : undefined;
      await prisma.$transaction(async (tx) => {
        await tx.insight.update({
          where: { id },
          data: {
            ...(body.name !== undefined ? { name: body.name } : {}),
            ...(body.derived_name !== undefined ? { derivedName: body.derived_name } : {}),
            ...(body.description !== undefined ? { description: body.description ?? '' } : {}),
            ...(body.query !== undefined
              ? { query: (body.query ?? undefined) as Prisma.InputJsonValue | undefined }
              : {}),
            ...(body.tags !== undefined ? { tags: body.tags } : {}),
            ...(body.favorited !== undefined ? { favorited: body.favorited } : {}),
            ...(body.saved !== undefined ? { saved: body.saved } : {}),
            ...(body.deleted !== undefined ? { deleted: body.deleted } : {}),
            lastModifiedById: userId,
            lastModifiedAt: new Date(),
          },
        });
        if (dashboards) await placeOn(tx, id, dashboards);
      });
      // A deleted insight answers its last state, as PostHog's PATCH does.
      const insight = await prisma.insight.findUnique({ where: { id }, include: insightInclude });
      if (!insight) throw new NotFoundError();
      return insight;
    },
  };
}

export type InsightService = ReturnType<typeof createInsightService>;
