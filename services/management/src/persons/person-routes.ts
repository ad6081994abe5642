// /api/projects/:project_id/persons/ (scope project:read): persons with their distinct ids and
// properties, filter distinct_id, offset pagination. id and uuid are both the person's uuid
// (PostHog's current API); the numeric row id is internal.
import express, { type Router } from 'express';
import type pg from 'pg';
import type { PrismaClient } from '@sett/db';
import { ValidationError } from '@sett/http';
import { authOf, requireScope } from '../auth/auth-context';
import { envelope, pageRequestInfo, parsePage } from '../pagination/pagination';
import { resolveReadableProjectId } from '../projects/project-access';

interface PersonRow {
  uuid: string;
  properties: Record<string, unknown>;
  created_at: Date;
  is_identified: boolean;
  distinct_ids: string[] | null;
}

export function personRoutes({
  prisma,
  pool,
  publicUrl,
}: {
  prisma: PrismaClient;
  pool: pg.Pool;
  publicUrl?: string;
}): Router {
  const router = express.Router();

  router.get('/api/projects/:projectId/persons/', async (req, res) => {
    const auth = authOf(res);
    requireScope(auth, 'project:read');
    const teamId = await resolveReadableProjectId(prisma, auth, req.params.projectId);
    const page = parsePage(req.query);
    const distinctId = req.query.distinct_id;
    if (distinctId !== undefined && typeof distinctId !== 'string')
      throw new ValidationError('distinct_id must be a string.', 'distinct_id', 'invalid_input');
    const filter = distinctId
      ? 'AND p.id = (SELECT person_id FROM person_distinct_ids WHERE team_id = $1 AND distinct_id = $2)'
      : '';
    const params: unknown[] = distinctId ? [teamId, distinctId] : [teamId];
    const [countResult, rowsResult] = await Promise.all([
      pool.query<{ count: string }>(
        `SELECT count(*) AS count FROM persons p WHERE p.team_id = $1 ${filter}`,
        params,
      ),
      pool.query<PersonRow>(
        `SELECT p.uuid, p.properties, p.created_at, p.is_identified,
                (SELECT array_agg(d.distinct_id ORDER BY d.id) FROM person_distinct_ids d WHERE d.person_id = p.id) AS distinct_ids
           FROM persons p WHERE p.team_id = $1 ${filter}
          ORDER BY p.id DESC LIMIT $${params.length + 1} OFFSET $${params.length + 2}`,
        [...params, page.limit, page.offset],
      ),
    ]);
    const results = rowsResult.rows.map((p) => ({
      id: p.uuid,
      uuid: p.uuid,
      distinct_ids: p.distinct_ids ?? [],
      properties: p.properties,
      is_identified: p.is_identified,
      created_at: p.created_at.toISOString(),
    }));
    res.json(
      envelope(pageRequestInfo(req, publicUrl), page, Number(countResult.rows[0]?.count ?? 0), results),
    );
  });

  return router;
}
