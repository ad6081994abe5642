// Events of a project, newest first, by keyset pagination on (timestamp, uuid) through the
// index events(team_id, timestamp DESC, uuid DESC): each page is one index range scan, however
// deep, so the list stays fast on millions of rows. Plain SQL through the pg pool (the hot
// path is visible). Persons of the page are resolved in one extra query.
import type pg from 'pg';
import { propertyFilterSql, type PropertyGroup } from '@sett/query';
import type { EventCursor } from '../pagination/pagination';

export interface EventFilters {
  event?: string;
  distinctId?: string;
  /** Events of every distinct id of this person (lower-case uuid). */
  personUuid?: string;
  /** PostHog property filters on the event's properties and its person's. */
  properties?: PropertyGroup;
  after?: Date;
  before?: Date;
  cursor?: EventCursor;
}

export interface EventRow {
  uuid: string;
  event: string;
  distinct_id: string;
  properties: Record<string, unknown>;
  timestamp: Date;
  ts_text: string;
  elements_chain?: string;
}

export interface PersonRef {
  id: string;
  uuid: string;
  distinct_ids: string[];
  properties: Record<string, unknown>;
  is_identified: boolean;
}

export async function listEvents(
  pool: pg.Pool,
  teamId: number,
  filters: EventFilters,
  limit: number,
): Promise<EventRow[]> {
  const where = ['team_id = $1'];
  const params: unknown[] = [teamId];
  const add = (clause: (p: string) => string, value: unknown) => {
    params.push(value);
    where.push(clause(`$${params.length}`));
  };
  if (filters.event !== undefined) add((p) => `event = ${p}`, filters.event);
  if (filters.distinctId !== undefined) add((p) => `distinct_id = ${p}`, filters.distinctId);
  if (filters.personUuid !== undefined)
    add(
      (
        p,
      ) => `distinct_id IN (SELECT d.distinct_id FROM person_distinct_ids d JOIN persons pp ON pp.id = d.person_id
        WHERE pp.team_id = $1 AND pp.uuid = ${p}::uuid)`,
      filters.personUuid,
    );
  if (filters.properties) {
    const bind = (value: unknown) => `$${params.push(value)}`;
    // The person's properties as of now (an event whose distinct id has no person has none).
    const personProps = `COALESCE((SELECT pp.properties FROM person_distinct_ids d JOIN persons pp
        ON pp.id = d.person_id WHERE d.team_id = $1 AND d.distinct_id = events.distinct_id), '{}'::jsonb)`;
    where.push(propertyFilterSql(filters.properties, { event: 'properties', person: personProps }, bind));
  }
  if (filters.after) add((p) => `timestamp > ${p}`, filters.after);
  if (filters.before) add((p) => `timestamp < ${p}`, filters.before);
  if (filters.cursor) {
    params.push(filters.cursor.ts, filters.cursor.uuid);
    where.push(`(timestamp, uuid) < ($${params.length - 1}::timestamptz, $${params.length}::uuid)`);
  }
  params.push(limit);
  const sql = `SELECT uuid, event, distinct_id, properties, timestamp, timestamp::text AS ts_text
    FROM events WHERE ${where.join(' AND ')}
    ORDER BY timestamp DESC, uuid DESC LIMIT $${params.length}`;
  return (await pool.query<EventRow>(sql, params)).rows;
}

/** distinct id -> person, for the distinct ids of one page. */
export async function personsByDistinctId(
  pool: pg.Pool,
  teamId: number,
  distinctIds: string[],
): Promise<Map<string, PersonRef>> {
  if (distinctIds.length === 0) return new Map();
  const { rows } = await pool.query<{
    distinct_id: string;
    uuid: string;
    properties: Record<string, unknown>;
    is_identified: boolean;
    all_ids: string[];
  }>(
    `SELECT d.distinct_id, p.uuid, p.properties, p.is_identified,
            (SELECT array_agg(d2.distinct_id ORDER BY d2.id) FROM person_distinct_ids d2 WHERE d2.person_id = p.id) AS all_ids
       FROM person_distinct_ids d JOIN persons p ON p.id = d.person_id
      WHERE d.team_id = $1 AND d.distinct_id = ANY($2::text[])`,
    [teamId, distinctIds],
  );
  return new Map(
    rows.map((r) => [
      r.distinct_id,
      {
        id: r.uuid,
        uuid: r.uuid,
        distinct_ids: r.all_ids ?? [],
        properties: r.properties,
        is_identified: r.is_identified,
      },
    ]),
  );
}
