// /api/projects/:project_id/cohorts/: list and retrieve (cohort:read), create, PATCH and DELETE
// (cohort:write; DELETE is a soft delete, 204). Create and PATCH also take multipart/form-data
// with a `csv` file, as PostHog's UI uploads a static cohort. Static members by distinct id:
// PATCH …/:id/add_persons_to_static_cohort/ {distinct_ids} and
// PATCH …/:id/remove_person_from_static_cohort/ {distinct_id | distinct_ids}; GET …/:id/members/.
// Reads check the project against the cached key context; writes always against the database.
import express, { type Request, type Router } from 'express';
import type { PrismaClient } from '@sett/db';
import { NotFoundError, ValidationError } from '@sett/http';
import { exceedsDepth, MAX_JSON_DEPTH, unstorableReason } from '@sett/schemas';
import { authOf, requireScope } from '../auth/auth-context';
import { envelope, pageRequestInfo, parsePage } from '../pagination/pagination';
import { resolveProject, resolveReadableProjectId } from '../projects/project-access';
import { parseIntId, validateBody } from '../validate';
import { distinctIdsFromCsv } from './cohort-csv';
import { isMultipart, readMultipart } from './cohort-multipart';
import {
  validateCohortAddMembers,
  validateCohortCreate,
  validateCohortRemoveMembers,
  validateCohortUpdate,
} from './cohort-schemas';
import type { CohortService } from './cohort-service';

const BASE = '/api/projects/:projectId/cohorts/';

function cohortId(param: string): number {
  const id = parseIntId(param);
  if (!id) throw new NotFoundError();
  return id;
}

/**
 * The body of a create or PATCH: JSON as is, or the form fields of a multipart upload turned
 * into the same object (is_static/deleted "true"/"false", filters a JSON string), plus the CSV's
 * distinct ids. The form fields pass the same input rules as JSON bodies.
 */
async function readBody(req: Request): Promise<{ body: unknown; members?: string[] }> {
  if (!isMultipart(req)) return { body: req.body };
  const form = await readMultipart(req);
  const body: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(form.fields)) {
    const problem = unstorableReason(value);
    if (problem)
      throw new ValidationError(
        `${name} holds a character that cannot be stored.`,
        name,
        problem === 'nul' ? 'null_characters_not_allowed' : 'surrogate_characters_not_allowed',
      );
    if (name === 'is_static' || name === 'deleted') {
      if (value !== 'true' && value !== 'false')
        throw new ValidationError(`${name} must be true or false.`, name);
      body[name] = value === 'true';
    } else if (name === 'filters') {
      try {
        body.filters = JSON.parse(value);
      } catch {
        throw new ValidationError('filters must be a JSON object.', 'filters');
      }
      if (exceedsDepth(body.filters, MAX_JSON_DEPTH))
        throw new ValidationError(
          `filters nests deeper than ${MAX_JSON_DEPTH} levels.`,
          'filters',
          'too_deep',
        );
    } else body[name] = value;
  }
  return { body, members: form.csv ? distinctIdsFromCsv(form.csv) : undefined };
}

export function cohortRoutes({
  prisma,
  cohorts,
  publicUrl,
}: {
  prisma: PrismaClient;
  cohorts: CohortService;
  publicUrl?: string;
}): Router {
  const router = express.Router();

  router.get(BASE, async (req, res) => {
    const auth = authOf(res);
    requireScope(auth, 'cohort:read');
    const teamId = await resolveReadableProjectId(prisma, auth, req.params.projectId);
    const page = parsePage(req.query);
    const { count, results } = await cohorts.list(teamId, page);
    res.json(envelope(pageRequestInfo(req, publicUrl), page, count, results));
  });
  router.post(BASE, async (req, res) => {
    const auth = authOf(res);
    requireScope(auth, 'cohort:write');
    const team = await resolveProject(prisma, auth, req.params.projectId);
    const { body, members } = await readBody(req);
    res
      .status(201)
      .json(await cohorts.create(team.id, auth.userId, validateBody(validateCohortCreate, body), members));
  });
  router.get(`${BASE}:id/`, async (req, res) => {
    const auth = authOf(res);
    requireScope(auth, 'cohort:read');
    const teamId = await resolveReadableProjectId(prisma, auth, req.params.projectId);
    res.json(await cohorts.retrieve(teamId, cohortId(req.params.id)));
  });
  router.patch(`${BASE}:id/`, async (req, res) => {
    const auth = authOf(res);
    requireScope(auth, 'cohort:write');
    const team = await resolveProject(prisma, auth, req.params.projectId);
    const id = cohortId(req.params.id);
    const { body, members } = await readBody(req);
    res.json(await cohorts.update(team.id, id, validateBody(validateCohortUpdate, body), members));
  });
  router.delete(`${BASE}:id/`, async (req, res) => {
    const auth = authOf(res);
    requireScope(auth, 'cohort:write');
    const team = await resolveProject(prisma, auth, req.params.projectId);
    await cohorts.remove(team.id, cohortId(req.params.id));
    res.status(204).end();
  });
  router.patch(`${BASE}:id/add_persons_to_static_cohort/`, async (req, res) => {
    const auth = authOf(res);
    requireScope(auth, 'cohort:write');
    const team = await resolveProject(prisma, auth, req.params.projectId);
    const id = cohortId(req.params.id);
    const body = validateBody(validateCohortAddMembers, req.body);
    res.json(await cohorts.addMembers(team.id, id, body.distinct_ids));
  });
  router.patch(`${BASE}:id/remove_person_from_static_cohort/`, async (req, res) => {
    const auth = authOf(res);
    requireScope(auth, 'cohort:write');
    const team = await resolveProject(prisma, auth, req.params.projectId);
    const id = cohortId(req.params.id);
    const body = validateBody(validateCohortRemoveMembers, req.body);
    res.json(await cohorts.removeMembers(team.id, id, body.distinct_ids ?? [body.distinct_id!]));
  });
  router.get(`${BASE}:id/members/`, async (req, res) => {
    const auth = authOf(res);
    requireScope(auth, 'cohort:read');
    const teamId = await resolveReadableProjectId(prisma, auth, req.params.projectId);
    const page = parsePage(req.query);
    const { count, results } = await cohorts.members(teamId, cohortId(req.params.id), page);
    res.json(envelope(pageRequestInfo(req, publicUrl), page, count, results));
  });

  return router;
}
