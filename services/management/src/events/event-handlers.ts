// The events list's work (routes.ts declares it): newest first, PostHog's filters (event,
// distinct_id, person_id, after, before, properties), cursor pagination, so the envelope is
// {next, previous: null, results} without a count (counting millions of rows per page would
// defeat the index).
import type pg from 'pg';
import { ValidationError } from '@sett/http';
import type { RegexChecker } from '@sett/flags';
import { readPropertyFilters } from '@sett/query';
import { decodeCursor, encodeCursor, pageUrl, type PageRequestInfo } from '../pagination/pagination';
import { isUuid } from '../validate';
import type { EventListQuery } from './event-schemas';
import { listEvents, personsByDistinctId, type EventFilters } from './event-store';

// JavaScript parses dates from year -271821 to +275760; Postgres' timestamptz and the pg
// driver's text form do not agree on all of them. Years 1-9999 (UTC) are what both hold.
const MIN_DATE_MS = Date.parse('0001-01-01T00:00:00.000Z');
const MAX_DATE_MS = Date.parse('9999-12-31T23:59:59.999Z');

function dateParam(value: string | undefined, name: string): Date | undefined {
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

/** The filters of a checked query (the route's schema): 400 naming the parameter otherwise. */
export async function eventFilters(query: EventListQuery, regexes: RegexChecker): Promise<EventFilters> {
  if (query.offset !== undefined)
    throw new ValidationError(
      'The events list uses cursor pagination: follow next instead of offset.',
      'offset',
      'invalid_input',
    );
  if (query.person_id !== undefined && !isUuid(query.person_id))
    throw new ValidationError("person_id must be a person's uuid.", 'person_id', 'invalid_input');
  return {
    event: query.event,
    distinctId: query.distinct_id,
    personUuid: query.person_id?.toLowerCase(),
    after: dateParam(query.after, 'after'),
    before: dateParam(query.before, 'before'),
    cursor: decodeCursor(query.cursor),
    properties: query.properties
      ? await readPropertyFilters(query.properties, 'properties', ['event', 'person'], regexes)
      : undefined,
  };
}

export async function listEventPage(
  pool: pg.Pool,
  teamId: number,
  query: EventListQuery,
  info: PageRequestInfo,
  limit: number,
  regexes: RegexChecker,
) {
  const filters = await eventFilters(query, regexes);
  // One row more than the page tells whether a next page exists without counting.
  const rows = await listEvents(pool, teamId, filters, limit + 1);
  const page = rows.slice(0, limit);
  const persons = await personsByDistinctId(pool, teamId, [...new Set(page.map((r) => r.distinct_id))]);
  const last = page[page.length - 1];
  const next =
    rows.length > limit && last
      ? pageUrl(info, { limit, cursor: encodeCursor({ ts: last.ts_text, uuid: last.uuid }) })
      : null;
  return {
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
  };
}
