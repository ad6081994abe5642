// Dashboards (PostHog's Dashboard): a name, description, tags, pinned, and tiles, each an
// insight (added by PATCHing the insight's `dashboards`, or a dashboard's `tiles`) or a text.
// Soft-deleted: PATCH `deleted: true` (with `delete_insights`, the insights on no other live
// dashboard go too). Tiles are read with their insights; their results come from
// insight-results.ts in the route.
import type { Prisma, PrismaClient } from '@sett/db';
import { NotFoundError, ValidationError } from '@sett/http';
import type { Page } from '../pagination/pagination';
import { userBasicJson } from '../users/user-basic';
import { insightInclude, insightJson, type InsightWithRelations } from '../insights/insight-service';
import type { InsightResult } from '../insights/insight-results';

export interface TileWrite {
  id?: number;
  insight?: { id: number } | number | null;
  text?: { body: string } | null;
  layouts?: Record<string, unknown>;
  color?: string | null;
  deleted?: boolean;
}

export interface DashboardWrite {
  name?: string | null;
  description?: string | null;
  pinned?: boolean;
  tags?: string[];
  filters?: Record<string, unknown>;
  variables?: Record<string, unknown>;
  use_template?: string;
  deleted?: boolean;
  delete_insights?: boolean;
  tiles?: TileWrite[];
}

const dashboardInclude = { createdBy: true } as const;
type DashboardRow = Prisma.DashboardGetPayload<{ include: typeof dashboardInclude }>;

const tileInclude = { insight: { include: insightInclude } } as const;
export type TileRow = Prisma.DashboardTileGetPayload<{ include: typeof tileInclude }>;

export function dashboardBasicJson(d: DashboardRow) {
  return {
    id: d.id,
    name: d.name,
    description: d.description,
    pinned: d.pinned,
    created_at: d.createdAt.toISOString(),
    created_by: userBasicJson(d.createdBy),
    last_accessed_at: null,
    is_shared: false,
    deleted: d.deleted,
    creation_mode: 'default',
    tags: d.tags,
    restriction_level: 21,
    effective_restriction_level: 21,
    effective_privilege_level: 37,
    user_access_level: 'editor',
  };
}

function tileJson(t: TileRow, order: number, teamId: number, result: InsightResult | undefined) {
  const insight =
    t.insight && !t.insight.deleted ? insightJson(t.insight as InsightWithRelations, result) : null;
  return {
    id: t.id,
    insight,
    text:
      t.textBody === null
        ? null
        : { id: t.id, body: t.textBody, team: teamId, last_modified_at: t.lastModifiedAt.toISOString() },
    order,
    layouts: t.layouts,
    color: t.color,
    is_cached: result?.is_cached ?? false,
    last_refresh: result?.last_refresh ?? null,
    error: result?.query_status?.error
      ? { type: 'QueryError', message: result.query_status.error_message }
      : null,
  };
}

/** A dashboard with its live tiles, their results given in tile order. */
export function dashboardJson(d: DashboardRow, tiles: TileRow[], results: (InsightResult | undefined)[]) {
  return {
    ...dashboardBasicJson(d),
    filters: {},
    variables: {},
    breakdown_colors: [],
    data_color_theme_id: null,
    tiles: tiles.map((t, i) => tileJson(t, i, d.teamId, results[i])),
  };
}

function checkNotServed(body: DashboardWrite) {
  if (body.filters && Object.keys(body.filters).length > 0)
    throw new ValidationError(
      'filters (dashboard filters over every tile) are not served by Sett.',
      'filters',
    );
  if (body.variables && Object.keys(body.variables).length > 0)
    throw new ValidationError('variables (HogQL variables) are not served by Sett.', 'variables');
  if (body.use_template)
    throw new ValidationError('use_template (dashboard templates) is not served by Sett.', 'use_template');
}

const insightIdOf = (insight: TileWrite['insight']) =>
  insight === null || insight === undefined ? undefined : typeof insight === 'number' ? insight : insight.id;

export function createDashboardService(prisma: PrismaClient) {
  async function load(teamId: number, id: number) {
    const dashboard = await prisma.dashboard.findFirst({
      where: { id, teamId, deleted: false },
      include: dashboardInclude,
    });
    if (!dashboard) throw new NotFoundError();
    const tiles = await prisma.dashboardTile.findMany({
      where: { dashboardId: id, deleted: false, OR: [{ insightId: null }, { insight: { deleted: false } }] },
      include: tileInclude,
      orderBy: { id: 'asc' },
    });
    return { dashboard, tiles };
  }

  /** Applies PATCHed tiles: changes to this dashboard's tiles, new text and insight tiles. */
  async function applyTiles(
    tx: Prisma.TransactionClient,
    teamId: number,
    dashboardId: number,
    tiles: TileWrite[],
  ) {
    for (const [i, t] of tiles.entries()) {
      const attr = `tiles.${i}`;
      if (t.id !== undefined) {
        const existing = await tx.dashboardTile.findFirst({
          where: { id: t.id, dashboardId, deleted: false },
        });
        if (!existing) throw new ValidationError(`${attr}.id is not a tile of this dashboard.`, `${attr}.id`);
        if (t.text && existing.textBody === null)
          throw new ValidationError(`${attr}.text: an insight tile has no text.`, `${attr}.text`);
        await tx.dashboardTile.update({
          where: { id: t.id },
          data: {
            ...(t.layouts !== undefined ? { layouts: t.layouts as Prisma.InputJsonValue } : {}),
            ...(t.color !== undefined ? { color: t.color } : {}),
            ...(t.text ? { textBody: t.text.body } : {}),
            ...(t.deleted !== undefined ? { deleted: t.deleted } : {}),
            lastModifiedAt: new Date(),
          },
        });
        continue;
      }
      const insightId = insightIdOf(t.insight);
      if ((insightId === undefined) === !t.text)
        throw new ValidationError(`${attr}: a new tile has either an insight or a text.`, attr);
      if (insightId !== undefined) {
        const insight = await tx.insight.findFirst({
          where: { id: insightId, teamId, deleted: false },
          select: { id: true },
        });
        if (!insight)
          throw new ValidationError(`${attr}.insight is not an insight of this project.`, `${attr}.insight`);
        const already = await tx.dashboardTile.findFirst({
          where: { dashboardId, insightId, deleted: false },
        });
        if (already) continue;
      }
      await tx.dashboardTile.create({
        data: {
          dashboardId,
          insightId: insightId ?? null,
          textBody: t.text ? t.text.body : null,
          layouts: (t.layouts ?? {}) as Prisma.InputJsonValue,
          color: t.color ?? null,
        },
      });
    }
  }

  return {
    load,

    async list(teamId: number, filters: { search?: string; pinned?: boolean }, page: Page) {
      const where: Prisma.DashboardWhereInput = { teamId, deleted: false };
      if (filters.pinned !== undefined) where.pinned = filters.pinned;
      if (filters.search) where.name = { contains: filters.search, mode: 'insensitive' };
      const [count, dashboards] = await Promise.all([
        prisma.dashboard.count({ where }),
        prisma.dashboard.findMany({
          where,
          include: dashboardInclude,
          orderBy: [{ pinned: 'desc' }, { name: 'asc' }, { id: 'asc' }],
          skip: page.offset,
          take: page.limit,
        }),
      ]);
      return { count, results: dashboards.map(dashboardBasicJson) };
    },

    async create(teamId: number, userId: number, body: DashboardWrite) {
      checkNotServed(body);
      const id = await prisma.$transaction(async (tx) => {
        const dashboard = await tx.dashboard.create({
          data: {
            teamId,
            name: body.name ?? null,
            description: body.description ?? '',
            pinned: body.pinned ?? false,
            tags: body.tags ?? [],
            createdById: userId,
          },
        });
        if (body.tiles?.length) await applyTiles(tx, teamId, dashboard.id, body.tiles);
        return dashboard.id;
      });
      return load(teamId, id);
    },

    async update(teamId: number, id: number, body: DashboardWrite) {
      checkNotServed(body);
      const existing = await prisma.dashboard.findFirst({
        where: { id, teamId, deleted: false },
        select: { id: true },
      });
      if (!existing) throw new NotFoundError();
      await prisma.$transaction(async (tx) => {
        await tx.dashboard.update({
          where: { id },
          data: {
            ...(body.name !== undefined ? { name: body.name } : {}),
            ...(body.description !== undefined ? { description: body.description ?? '' } : {}),
            ...(body.pinned !== undefined ? { pinned: body.pinned } : {}),
            ...(body.tags !== undefined ? { tags: body.tags } : {}),
            ...(body.deleted !== undefined ? { deleted: body.deleted } : {}),
            lastModifiedAt: new Date(),
          },
        });
        if (body.tiles?.length) await applyTiles(tx, teamId, id, body.tiles);
        if (body.deleted && body.delete_insights) {
          // Insights on this dashboard and on no other live one go with it.
          const here = await tx.dashboardTile.findMany({
            where: { dashboardId: id, deleted: false, insightId: { not: null } },
          });
          for (const t of here) {
            const elsewhere = await tx.dashboardTile.count({
              where: {
                insightId: t.insightId,
                deleted: false,
                dashboardId: { not: id },
                dashboard: { deleted: false },
              },
            });
            if (elsewhere === 0)
              await tx.insight.update({ where: { id: t.insightId! }, data: { deleted: true } });
          }
        }
      });
      if (body.deleted) {
        const dashboard = await prisma.dashboard.findUniqueOrThrow({
          where: { id },
          include: dashboardInclude,
        });
        return { dashboard, tiles: [] as TileRow[] };
      }
      return load(teamId, id);
    },
  };
}

export type DashboardService = ReturnType<typeof createDashboardService>;
