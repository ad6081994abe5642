// Group types and groups (ingestion writes both: group types on first sight, groups from
// $groupidentify), as PostHog's groups_types and groups endpoints read them.
import type pg from 'pg';
import { NotFoundError, ValidationError } from '@sett/http';

export interface GroupTypeRow {
  group_type: string;
  group_type_index: number;
  name_singular: string | null;
  name_plural: string | null;
}

const groupTypeJson = (r: GroupTypeRow) => ({ ...r, detail_dashboard: null, default_columns: null });

interface GroupRow {
  id: string;
  group_type_index: number;
  group_key: string;
  group_properties: Record<string, unknown>;
  created_at: Date;
  created_text: string;
}

const groupJson = (r: GroupRow) => ({
  group_type_index: r.group_type_index,
  group_key: r.group_key,
  group_properties: r.group_properties,
  created_at: r.created_at.toISOString(),
});

/** Newest first, as PostHog's cursor pagination pages groups: (created_at, id) of the last row. */
export interface GroupCursor {
  createdAt: string;
  id: string;
}

const CURSOR_TIME = /^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}(\.\d{1,6})?[+-]\d{2}(:?\d{2})?$/;

export function encodeGroupCursor(c: GroupCursor): string {
  return Buffer.from(JSON.stringify([c.createdAt, c.id])).toString('base64url');
}

export function decodeGroupCursor(raw: string | undefined): GroupCursor | undefined {
  if (raw === undefined || raw === '') return undefined;
  try {
    const v = JSON.parse(Buffer.from(raw, 'base64url').toString('utf8')) as unknown;
    if (
      Array.isArray(v) &&
      typeof v[0] === 'string' &&
      CURSOR_TIME.test(v[0]) &&
      typeof v[1] === 'string' &&
      /^\d{1,19}$/.test(v[1])
    )
      return { createdAt: v[0], id: v[1] };
  } catch {
    // the 400 below
  }
  throw new ValidationError('cursor is not a valid cursor.', 'cursor', 'invalid_input');
}

const escapeLike = (s: string) => s.replace(/[\\%_]/g, '\\$&');

export function createGroupStore(pool: pg.Pool) {
  async function listTypes(teamId: number) {
    const { rows } = await pool.query<GroupTypeRow>(
      `SELECT group_type, group_type_index, name_singular, name_plural FROM group_type_mappings
        WHERE team_id = $1 ORDER BY group_type_index`,
      [teamId],
    );
    return rows.map(groupTypeJson);
  }

  return {
    listTypes,

    /** PostHog's update_metadata: display names by group type index; the list after. */
    async updateTypes(
      teamId: number,
      rows: { group_type_index: number; name_singular?: string | null; name_plural?: string | null }[],
    ) {
      const client = await pool.connect();
      try {
        await client.query('BEGIN');
        for (const [i, row] of rows.entries()) {
          const sets: string[] = [];
          const params: unknown[] = [teamId, row.group_type_index];
          for (const field of ['name_singular', 'name_plural'] as const)
            if (row[field] !== undefined) {
              params.push(row[field] === '' ? null : row[field]);
              sets.push(`${field} = $${params.length}`);
            }
          const { rowCount } = await client.query(
            `UPDATE group_type_mappings SET ${sets.length ? sets.join(', ') : 'group_type = group_type'}
              WHERE team_id = $1 AND group_type_index = $2`,
            params,
          );
          if (!rowCount)
            throw new ValidationError(
              `The project has no group type of index ${row.group_type_index}.`,
              `${i}.group_type_index`,
              'does_not_exist',
            );
        }
        await client.query('COMMIT');
      } catch (error) {
        await client.query('ROLLBACK').catch(() => undefined);
        throw error;
      } finally {
        client.release();
      }
      return listTypes(teamId);
    },

    /** One page of a group type's groups, newest first; `search` is in the properties' text or
     * is the key (case-insensitive), as PostHog searches. One row more tells if there is a next. */
    async list(
      teamId: number,
      groupTypeIndex: number,
      search: string | undefined,
      cursor: GroupCursor | undefined,
      limit: number,
    ) {
      const params: unknown[] = [teamId, groupTypeIndex];
      let where = 'team_id = $1 AND group_type_index = $2';
      if (search !== undefined && search !== '') {
        params.push(`%${escapeLike(search)}%`, search);
        where += ` AND (group_properties::text ILIKE $${params.length - 1} OR lower(group_key) = lower($${params.length}))`;
      }
      if (cursor) {
        params.push(cursor.createdAt, cursor.id);
        where += ` AND (created_at, id) < ($${params.length - 1}::timestamptz, $${params.length}::bigint)`;
      }
      params.push(limit + 1);
      const { rows } = await pool.query<GroupRow>(
        `SELECT id::text, group_type_index, group_key, group_properties, created_at, created_at::text AS created_text
           FROM groups WHERE ${where} ORDER BY created_at DESC, id DESC LIMIT $${params.length}`,
        params,
      );
      const page = rows.slice(0, limit);
      const last = page[page.length - 1];
      return {
        results: page.map(groupJson),
        next: rows.length > limit && last ? { createdAt: last.created_text, id: last.id } : undefined,
      };
    },

    async find(teamId: number, groupTypeIndex: number, groupKey: string) {
      const { rows } = await pool.query<GroupRow>(
        `SELECT id::text, group_type_index, group_key, group_properties, created_at, created_at::text AS created_text
           FROM groups WHERE team_id = $1 AND group_type_index = $2 AND group_key = $3`,
        [teamId, groupTypeIndex, groupKey],
      );
      if (!rows[0]) throw new NotFoundError();
      return groupJson(rows[0]);
    },

    /** Each group type's property names with how many groups hold them, most held first. */
    async propertyDefinitions(teamId: number) {
      const { rows } = await pool.query<{ group_type_index: number; name: string; count: number }>(
        `SELECT g.group_type_index, k.name, count(*)::int AS count
           FROM groups g, jsonb_object_keys(CASE WHEN jsonb_typeof(g.group_properties) = 'object'
                                                  THEN g.group_properties ELSE '{}'::jsonb END) AS k(name)
          WHERE g.team_id = $1
          GROUP BY g.group_type_index, k.name
          ORDER BY g.group_type_index, count DESC, k.name`,
        [teamId],
      );
      const byType: Record<string, { name: string; count: number }[]> = {};
      for (const r of rows)
        (byType[String(r.group_type_index)] ??= []).push({ name: r.name, count: r.count });
      return byType;
    },
  };
}

export type GroupStore = ReturnType<typeof createGroupStore>;
