// Annotations (PostHog's Annotation): a note on a date, in one project (scope `project`), in
// every project of its organization (`organization`), or on one insight (`dashboard_item`) or
// dashboard (`dashboard`) of the project. A project lists its own and its organization's.
// Soft-deleted: PATCH `deleted: true`.
import type { Prisma, PrismaClient } from '@sett/db';
import { NotFoundError, ValidationError } from '@sett/http';
import type { Page } from '../pagination/pagination';
import { userBasicJson } from '../users/user-basic';

export const ANNOTATION_SCOPES = ['project', 'organization', 'dashboard_item', 'dashboard'] as const;

export interface AnnotationWrite {
  content?: string | null;
  date_marker?: string | null;
  scope?: (typeof ANNOTATION_SCOPES)[number];
  creation_type?: 'USR' | 'GIT';
  dashboard_item?: number | null;
  dashboard_id?: number | null;
  deleted?: boolean;
}

const include = {
  createdBy: true,
  insight: { select: { id: true, shortId: true, name: true, derivedName: true } },
  dashboard: { select: { id: true, name: true } },
} as const;
type AnnotationRow = Prisma.AnnotationGetPayload<{ include: typeof include }>;

export function annotationJson(a: AnnotationRow) {
  return {
    id: a.id,
    content: a.content,
    date_marker: a.dateMarker?.toISOString() ?? null,
    creation_type: a.creationType,
    dashboard_item: a.insightId,
    dashboard_id: a.dashboardId,
    dashboard_name: a.dashboard?.name ?? null,
    insight_short_id: a.insight?.shortId ?? null,
    insight_name: a.insight?.name ?? null,
    insight_derived_name: a.insight?.derivedName ?? null,
    created_by: userBasicJson(a.createdBy),
    created_at: a.createdAt.toISOString(),
    updated_at: a.updatedAt.toISOString(),
    deleted: a.deleted,
    scope: a.scope,
  };
}

/** What a project sees: its own annotations and its organization's. */
const visible = (teamId: number, organizationId: string): Prisma.AnnotationWhereInput => ({
  deleted: false,
  OR: [{ teamId }, { organizationId, scope: 'organization' }],
});

export function createAnnotationService(prisma: PrismaClient) {
  /** The insight or dashboard a scope needs, in this project, or a 400 naming the field. */
  async function checkTargets(teamId: number, body: AnnotationWrite, current?: AnnotationRow) {
    const scope = body.scope ?? current?.scope ?? 'project';
    const insightId = body.dashboard_item !== undefined ? body.dashboard_item : (current?.insightId ?? null);
    const dashboardId = body.dashboard_id !== undefined ? body.dashboard_id : (current?.dashboardId ?? null);
    if (insightId !== null) {
      const found = await prisma.insight.count({ where: { id: insightId, teamId, deleted: false } });
      if (!found)
        throw new ValidationError('dashboard_item is not an insight of this project.', 'dashboard_item');
    }
    if (dashboardId !== null) {
      const found = await prisma.dashboard.count({ where: { id: dashboardId, teamId, deleted: false } });
      if (!found)
        throw new ValidationError('dashboard_id is not a dashboard of this project.', 'dashboard_id');
    }
    if (scope === 'dashboard_item' && insightId === null)
      throw new ValidationError('scope dashboard_item needs dashboard_item (the insight).', 'dashboard_item');
    if (scope === 'dashboard' && dashboardId === null)
      throw new ValidationError('scope dashboard needs dashboard_id.', 'dashboard_id');
  }

  async function load(teamId: number, organizationId: string, id: number) {
    const a = await prisma.annotation.findFirst({
      where: { id, ...visible(teamId, organizationId) },
      include,
    });
    if (!a) throw new NotFoundError();
    return a;
  }

  return {
    async list(
      teamId: number,
      organizationId: string,
      filters: { search?: string; scope?: string },
      page: Page,
    ) {
      const where: Prisma.AnnotationWhereInput = { AND: [visible(teamId, organizationId)] };
      if (filters.search) where.content = { contains: filters.search, mode: 'insensitive' };
      if (filters.scope) where.scope = filters.scope;
      const [count, rows] = await Promise.all([
        prisma.annotation.count({ where }),
        prisma.annotation.findMany({
          where,
          include,
          orderBy: [{ dateMarker: { sort: 'desc', nulls: 'last' } }, { id: 'desc' }],
          skip: page.offset,
          take: page.limit,
        }),
      ]);
      return { count, results: rows.map(annotationJson) };
    },

    async retrieve(teamId: number, organizationId: string, id: number) {
      return annotationJson(await load(teamId, organizationId, id));
    },

    async create(teamId: number, organizationId: string, userId: number, body: AnnotationWrite) {
      await checkTargets(teamId, body);
      const a = await prisma.annotation.create({
        data: {
          teamId,
          organizationId,
          content: body.content ?? '',
          dateMarker: body.date_marker ? new Date(body.date_marker) : null,
          scope: body.scope ?? 'project',
          creationType: body.creation_type ?? 'USR',
          insightId: body.dashboard_item ?? null,
          dashboardId: body.dashboard_id ?? null,
          createdById: userId,
        },
        include,
      });
      return annotationJson(a);
    },

    /** Only the project that made an annotation changes it, also an organization-wide one. */
    async update(teamId: number, organizationId: string, id: number, body: AnnotationWrite) {
      const current = await load(teamId, organizationId, id);
      if (current.teamId !== teamId) throw new NotFoundError();
      await checkTargets(teamId, body, current);
      const a = await prisma.annotation.update({
        where: { id },
        data: {
          ...(body.content !== undefined ? { content: body.content ?? '' } : {}),
          ...(body.date_marker !== undefined
            ? { dateMarker: body.date_marker ? new Date(body.date_marker) : null }
            : {}),
          ...(body.scope !== undefined ? { scope: body.scope } : {}),
          ...(body.creation_type !== undefined ? { creationType: body.creation_type } : {}),
          ...(body.dashboard_item !== undefined ? { insightId: body.dashboard_item } : {}),
          ...(body.dashboard_id !== undefined ? { dashboardId: body.dashboard_id } : {}),
          ...(body.deleted !== undefined ? { deleted: body.deleted } : {}),
          updatedAt: new Date(),
        },
        include,
      });
      return annotationJson(a);
    },
  };
}

export type AnnotationService = ReturnType<typeof createAnnotationService>;
