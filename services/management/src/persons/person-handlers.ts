// The persons endpoints' work (routes.ts declares them): the list with PostHog's filters
// (distinct_id, email, search, properties), one person, deletions by job (DELETE one,
// bulk_delete by `ids` or `distinct_ids`; the 202 carries the job's URL in Location) and the
// deletion jobs themselves. id and uuid are both the person's uuid (PostHog's current API); the
// numeric row id is internal. Plain SQL through the pg pool. See person-deletion.ts and
// docs/data-lifecycle.md.
import type pg from 'pg';
import { NotFoundError } from '@sett/http';
import type { RegexChecker } from '@sett/flags';
import { propertyFilterSql, readPropertyFilters } from '@sett/query';
import type { JobRow } from '../jobs/job-store';
import type { Page } from '../pagination/pagination';
import { isUuid } from '../validate';
import { deletePersons, PERSON_DELETION_JOB, type PersonDeletionResult } from './person-deletion';
import type { PersonListQuery } from './person-schemas';

interface PersonRow {
  uuid: string;
  properties: Record<string, unknown>;
  created_at: Date;
  is_identified: boolean;
  distinct_ids: string[] | null;
}

const PERSON_COLUMNS = `p.uuid, p.properties, p.created_at, p.is_identified,
  (SELECT array_agg(d.distinct_id ORDER BY d.id) FROM person_distinct_ids d WHERE d.person_id = p.id) AS distinct_ids`;

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

/** The WHERE conditions of the list's filters on persons `p` (parameters after $1, the team). */
async function personFilters(
  query: PersonListQuery,
  params: unknown[],
  regexes: RegexChecker,
): Promise<string[]> {
  const bind = (value: unknown) => `$${params.push(value)}`;
  const where: string[] = [];
  if (query.distinct_id)
    where.push(
      `p.id = (SELECT person_id FROM person_distinct_ids WHERE team_id = $1 AND distinct_id = ${bind(query.distinct_id)})`,
    );
  if (query.email) where.push(`p.properties ->> 'email' = ${bind(query.email)}`);
  if (query.search) {
    // PostHog: the distinct id exactly, or text in the email (and Sett: the name) property.
    const text = bind(query.search.toLowerCase());
    where.push(`(EXISTS (SELECT 1 FROM person_distinct_ids s WHERE s.team_id = $1 AND s.person_id = p.id
        AND s.distinct_id = ${bind(query.search)})
      OR strpos(lower(p.properties ->> 'email'), ${text}) > 0
      OR strpos(lower(p.properties ->> 'name'), ${text}) > 0)`);
  }
  if (query.properties) {
    const group = await readPropertyFilters(query.properties, 'properties', ['person'], regexes);
    where.push(propertyFilterSql(group, { person: 'p.properties' }, bind));
  }
  return where;
}

export async function listPersons(
  pool: pg.Pool,
  teamId: number,
  page: Page,
  query: PersonListQuery,
  regexes: RegexChecker,
) {
  const params: unknown[] = [teamId];
  const where = ['p.team_id = $1', ...(await personFilters(query, params, regexes))].join(' AND ');
  const [countResult, rowsResult] = await Promise.all([
    pool.query<{ count: string }>(`SELECT count(*) AS count FROM persons p WHERE ${where}`, params),
    pool.query<PersonRow>(
      `SELECT ${PERSON_COLUMNS} FROM persons p WHERE ${where}
        ORDER BY p.id DESC LIMIT $${params.length + 1} OFFSET $${params.length + 2}`,
      [...params, page.limit, page.offset],
    ),
  ]);
  return { count: Number(countResult.rows[0]?.count ?? 0), results: rowsResult.rows.map(personView) };
}

export async function retrievePerson(pool: pg.Pool, teamId: number, uuid: string) {
  if (!isUuid(uuid)) throw new NotFoundError('Person not found.');
  const { rows } = await pool.query<PersonRow>(
    `SELECT ${PERSON_COLUMNS} FROM persons p WHERE p.team_id = $1 AND p.uuid = $2`,
    [teamId, uuid.toLowerCase()],
  );
  if (!rows[0]) throw new NotFoundError('Person not found.');
  return personView(rows[0]);
}

export async function listDeletions(pool: pg.Pool, teamId: number, page: Page) {
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
  return {
    count: Number(countResult.rows[0]?.count ?? 0),
    results: rowsResult.rows.map(deletionView),
  };
}

export async function retrieveDeletion(pool: pg.Pool, teamId: number, jobIdParam: string) {
  const jobId = /^[1-9][0-9]{0,17}$/.test(jobIdParam) ? jobIdParam : undefined;
  const { rows } = jobId
    ? await pool.query<JobRow>(`SELECT * FROM background_jobs WHERE id = $1 AND team_id = $2 AND kind = $3`, [
        jobId,
        teamId,
        PERSON_DELETION_JOB,
      ])
    : { rows: [] };
  if (!rows[0]) throw new NotFoundError('Deletion not found.');
  return deletionView(rows[0]);
}

/** Where the 202 of a deletion points: the job's own URL. */
export function deletionJobUrl(teamId: number, result: PersonDeletionResult): string {
  return `/api/projects/${teamId}/persons/deletions/${result.job.id}/`;
}

/** Deletes one person by uuid; 404 when the project has no such person. */
export async function deletePerson(
  pool: pg.Pool,
  teamId: number,
  uuid: string,
  opts: { deleteEvents: boolean; userId: number },
): Promise<PersonDeletionResult> {
  if (!isUuid(uuid)) throw new NotFoundError('Person not found.');
  const result = await deletePersons(pool, teamId, { personUuids: [uuid.toLowerCase()] }, opts);
  if (!result || result.personsDeleted === 0) throw new NotFoundError('Person not found.');
  return result;
}
