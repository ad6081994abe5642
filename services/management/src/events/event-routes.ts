// /api/projects/:project_id/events/ (scope query:read, PostHog's): newest first, filters event,
// distinct_id, after, before; cursor pagination, so the envelope is {next, previous: null,
// results} without a count (counting millions of rows per page would defeat the index).
import express, { type Router } from 'express';
import type pg from 'pg';
import type { PrismaClient } from '@sett/db';
import { ValidationError } from '@sett/http';
import { authOf, requireScope } from '../auth/auth-context';
import { decodeCursor, encodeCursor, pageRequestInfo, pageUrl, parsePage } from '../pagination/pagination';
import { resolveReadableProjectId } from '../projects/project-access';
import { listEvents, personsByDistinctId, type EventFilters } from './event-store';

function stringParam(raw: unknown, name: string): string | undefined {
  if (raw === undefined) return undefined;
  if (typeof raw !== 'string' || raw.length > 400)
    throw new ValidationError(`${name} must be a string.`, name, 'invalid_input');
  return raw;
}

// JavaScript parses dates from year -271821 to +275760; Postgres' timestamptz and the pg
// driver's text form do not agree on all of them. Years 1-9999 (UTC) are what both hold.
const MIN_DATE_MS = Date.parse('0001-01-01T00:00:00.000Z');
const MAX_DATE_MS = Date.parse('9999-12-31T23:59:59.999Z');

function dateParam(raw: unknown, name: string): Date | undefined {
  const value = stringParam(raw, name);
  if (value === undefined || value === '') return undefined;
  const date = new Date(value);
  if (Number.isNaN(date.getTime()))
    throw new ValidationError(`${name} must be an ISO 8601 date-time.`, name, 'invalid_input');
  if (date.getTime() < MIN_DATE_MS || date.getTime() > MAX_DATE_MS)
    throw new ValidationError(
      `${name} must be between 0001-01-01 and 9999-12-31 (UTC).`,
      name,
      'invalid_input',
    );
  return date;
}

export function eventRoutes({
  prisma,
  pool,
  publicUrl,
}: {
  prisma: PrismaClient;
  pool: pg.Pool;
  publicUrl?: string;
}): Router {
  const router = express.Router();

  router.get('/api/projects/:projectId/events/', async (req, res) => {
    const auth = authOf(res);
    requireScope(auth, 'query:read');
    const teamId = await resolveReadableProjectId(prisma, auth, req.params.projectId);
    if (req.query.offset !== undefined)
      throw new ValidationError(
        'The events list uses cursor pagination: follow next instead of offset.',
        'offset',
        'invalid_input',
      );
    const { limit } = parsePage(req.query);
    const filters: EventFilters = {
      event: stringParam(req.query.event, 'event'),
      distinctId: stringParam(req.query.distinct_id, 'distinct_id'),
      after: dateParam(req.query.after, 'after'),
      before: dateParam(req.query.before, 'before'),
      cursor: decodeCursor(req.query.cursor),
    };
    // One row more than the page tells whether a next page exists without counting.
    const rows = await listEvents(pool, teamId, filters, limit + 1);
    const page = rows.slice(0, limit);
    const persons = await personsByDistinctId(pool, teamId, [...new Set(page.map((r) => r.distinct_id))]);
    const last = page[page.length - 1];
    const next =
      rows.length > limit && last
        ? pageUrl(pageRequestInfo(req, publicUrl), {
            limit,
            cursor: encodeCursor({ ts: last.ts_text, uuid: last.uuid }),
          })
        : null;
    res.json({
      next,
      previous: null,
      results: page.map((r) => ({
        id: r.uuid,
        uuid: r.uuid,
        event: r.event,
        distinct_id: r.distinct_id,
        properties: r.properties,
        timestamp: r.timestamp.toISOString(),
        person: persons.get(r.distinct_id) ?? null,
      })),
    });
  });

  return router;
}
