// /api/projects/:project_id/persons/ (scope person:read, as one person): persons with their distinct ids and
// properties, filter distinct_id, offset pagination. id and uuid are both the person's uuid
// (PostHog's current API); the numeric row id is internal.
// One person: GET .../persons/:uuid/ (person:read) and DELETE .../persons/:uuid/[?delete_events=true]
// (person:write, 202 as PostHog), POST .../persons/bulk_delete/ by `ids` or `distinct_ids`
// (person:write, 202). Deletions run as jobs, readable at .../persons/deletions/[:id/]; the 202
// carries the job's URL in Location. See person-deletion.ts and docs/data-lifecycle.md.
import express, { type Request, type Router } from 'express';
import type pg from 'pg';
import type { PrismaClient } from '@sett/db';
import { NotFoundError, ValidationError } from '@sett/http';
import { authOf, requireScope } from '../auth/auth-context';
import type { JobRow } from '../jobs/job-store';
import { envelope, pageRequestInfo, parsePage } from '../pagination/pagination';
import { resolveProject, resolveReadableProjectId } from '../projects/project-access';
import { isUuid, validateBody } from '../validate';
import { deletePersons, PERSON_DELETION_JOB, type PersonDeletionResult } from './person-deletion';
import { validatePersonBulkDelete } from './person-schemas';

interface PersonRow {
  uuid: string;
  properties: Record<string, unknown>;
  created_at: Date;
  is_identified: boolean;
  distinct_ids: string[] | null;
}

const PERSON_SELECT = `SELECT p.uuid, p.properties, p.created_at, p.is_identified,
  (SELECT array_agg(d.distinct_id ORDER BY d.id) FROM person_distinct_ids d WHERE d.person_id = p.id) AS distinct_ids
  FROM persons p`;

const personView = (p: PersonRow) => ({
  id: p.uuid,
  uuid: p.uuid,
  distinct_ids: p.distinct_ids ?? [],
  properties: p.properties,
  is_identified: p.is_identified,
  created_at: p.created_at.toISOString(),
});

/** A deletion job as the API shows it; the erased distinct ids themselves are not shown. */
const deletionView = (job: JobRow) => {
  const payload = job.payload as {
    delete_events?: boolean;
    distinct_id_count?: number;
    distinct_ids?: unknown[];
  };
  const progress = job.progress as { events_deleted?: number; persons_swept?: number; phase?: string };
  return {
    id: Number(job.id),
    status: job.state,
    phase: progress.phase ?? 'events',
    delete_events: payload.delete_events ?? false,
    distinct_id_count: payload.distinct_id_count ?? payload.distinct_ids?.length ?? 0,
    events_deleted: progress.events_deleted ?? 0,
    persons_swept: progress.persons_swept ?? 0,
    attempts: job.attempts,
    last_error: job.last_error,
    run_after: job.run_after.toISOString(),
    created_at: job.created_at.toISOString(),
    started_at: job.started_at?.toISOString() ?? null,
    finished_at: job.finished_at?.toISOString() ?? null,
  };
};

/** `?delete_events=`: true / 1 or false / 0 (absent: false); anything else is a 400. */
function deleteEventsParam(req: Request): boolean {
  const raw = req.query.delete_events;
  if (raw === undefined) return false;
  if (typeof raw === 'string' && /^(true|1)$/i.test(raw)) return true;
  if (typeof raw === 'string' && /^(false|0)$/i.test(raw)) return false;
  throw new ValidationError('delete_events must be true or false.', 'delete_events', 'invalid_input');
}

export function personRoutes({
  prisma,
  pool,
  publicUrl,
  onJobQueued,
}: {
  prisma: PrismaClient;
  pool: pg.Pool;
  publicUrl?: string;
  /** Called after a deletion job was queued (the in-process job runner polls at once). */
  onJobQueued?: () => void;
}): Router {
  const router = express.Router();

  const jobUrl = (teamId: number, result: PersonDeletionResult) => {
    onJobQueued?.();
    return `/api/projects/${teamId}/persons/deletions/${result.job.id}/`;
  };

  router.get('/api/projects/:projectId/persons/', async (req, res) => {
    const auth = authOf(res);
    requireScope(auth, 'person:read');
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
    const results = rowsResult.rows.map(personView);
    res.json(
      envelope(pageRequestInfo(req, publicUrl), page, Number(countResult.rows[0]?.count ?? 0), results),
    );
  });

  // Before /persons/:uuid/ so that "deletions" and "bulk_delete" are not taken for a uuid.
  router.get('/api/projects/:projectId/persons/deletions/', async (req, res) => {
    const auth = authOf(res);
    requireScope(auth, 'person:read');
    const teamId = await resolveReadableProjectId(prisma, auth, req.params.projectId);
    const page = parsePage(req.query);
    const [countResult, rowsResult] = await Promise.all([
      pool.query<{ count: string }>(
        `SELECT count(*) AS count FROM background_jobs WHERE team_id = $1 AND kind = $2`,
        [teamId, PERSON_DELETION_JOB],
      ),
      pool.query<JobRow>(
        `SELECT * FROM background_jobs WHERE team_id = $1 AND kind = $2
          ORDER BY created_at DESC, id DESC LIMIT $3 OFFSET $4`,
        [teamId, PERSON_DELETION_JOB, page.limit, page.offset],
      ),
    ]);
    res.json(
      envelope(
        pageRequestInfo(req, publicUrl),
        page,
        Number(countResult.rows[0]?.count ?? 0),
        rowsResult.rows.map(deletionView),
      ),
    );
  });

  router.get('/api/projects/:projectId/persons/deletions/:jobId/', async (req, res) => {
    const auth = authOf(res);
    requireScope(auth, 'person:read');
    const teamId = await resolveReadableProjectId(prisma, auth, req.params.projectId);
    const jobId = /^[1-9][0-9]{0,17}$/.test(req.params.jobId) ? req.params.jobId : undefined;
    const { rows } = jobId
      ? await pool.query<JobRow>(
          `SELECT * FROM background_jobs WHERE id = $1 AND team_id = $2 AND kind = $3`,
          [jobId, teamId, PERSON_DELETION_JOB],
        )
      : { rows: [] };
    if (!rows[0]) throw new NotFoundError('Deletion not found.');
    res.json(deletionView(rows[0]));
  });

  router.post('/api/projects/:projectId/persons/bulk_delete/', async (req, res) => {
    const auth = authOf(res);
    requireScope(auth, 'person:write');
    const team = await resolveProject(prisma, auth, req.params.projectId);
    const body = validateBody(validatePersonBulkDelete, req.body);
    if (!body.ids && !body.distinct_ids)
      throw new ValidationError('You must pass either ids or distinct_ids.', 'ids', 'invalid_input');
    // PostHog takes delete_events in the body; the query string works too, as on DELETE.
    const deleteEvents = body.delete_events ?? deleteEventsParam(req);
    const result = await deletePersons(
      pool,
      team.id,
      { personUuids: body.ids?.map((id) => id.toLowerCase()), distinctIds: body.distinct_ids },
      { deleteEvents, userId: auth.userId },
    );
    if (result) res.location(jobUrl(team.id, result));
    res.status(202).end();
  });

  router.get('/api/projects/:projectId/persons/:uuid/', async (req, res) => {
    const auth = authOf(res);
    requireScope(auth, 'person:read');
    const teamId = await resolveReadableProjectId(prisma, auth, req.params.projectId);
    if (!isUuid(req.params.uuid)) throw new NotFoundError('Person not found.');
    const { rows } = await pool.query<PersonRow>(`${PERSON_SELECT} WHERE p.team_id = $1 AND p.uuid = $2`, [
      teamId,
      req.params.uuid.toLowerCase(),
    ]);
    if (!rows[0]) throw new NotFoundError('Person not found.');
    res.json(personView(rows[0]));
  });

  router.delete('/api/projects/:projectId/persons/:uuid/', async (req, res) => {
    const auth = authOf(res);
    requireScope(auth, 'person:write');
    const team = await resolveProject(prisma, auth, req.params.projectId);
    const deleteEvents = deleteEventsParam(req);
    if (!isUuid(req.params.uuid)) throw new NotFoundError('Person not found.');
    const result = await deletePersons(
      pool,
      team.id,
      { personUuids: [req.params.uuid.toLowerCase()] },
      { deleteEvents, userId: auth.userId },
    );
    if (!result || result.personsDeleted === 0) throw new NotFoundError('Person not found.');
    res.status(202).location(jobUrl(team.id, result)).end();
  });

  return router;
}
