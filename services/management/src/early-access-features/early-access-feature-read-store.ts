// Early access feature reads in one statement through the pg pool: the page with each
// feature's flag joined, plus the total count (a scalar subquery on the team_id index, cheaper
// than a window count, which would materialise every row of the project before the LIMIT).
// The order (created_at DESC, id DESC) walks the (team_id, created_at) index backwards with an
// incremental sort on id for equal timestamps, so OFFSET pages stay an index walk.
import type pg from 'pg';
import type { Page } from '../pagination/pagination';
import { isoMs } from '../read-sql';
import type { EarlyAccessFeatureRow } from './early-access-feature-service';

const FEATURE_JSON = `json_build_object(
  'id', e.id, 'name', e.name, 'description', e.description, 'stage', e.stage,
  'documentationUrl', e.documentation_url, 'createdAt', ${isoMs('e.created_at')},
  'featureFlag', CASE WHEN f.id IS NULL THEN NULL ELSE json_build_object(
    'id', f.id, 'teamId', f.team_id, 'name', f.name, 'key', f.key, 'filters', f.filters,
    'deleted', f.deleted, 'active', f.active,
    'ensureExperienceContinuity', f.ensure_experience_continuity,
    'hasEncryptedPayloads', f.has_encrypted_payloads) END)`;

// The page is cut on the bare rows first and only its 100 rows are joined and turned into
// JSON: Postgres computes the select list of the rows OFFSET skips, too.
// $4: the name search (PostHog's `search`: case-insensitive text the name contains), or null.
const MATCHES = `team_id = $1 AND ($4::text IS NULL OR strpos(lower(name), lower($4::text)) > 0)`;
const LIST_SQL = `
SELECT (SELECT count(*)::int FROM early_access_features WHERE ${MATCHES}) AS count,
  (SELECT coalesce(json_agg(${FEATURE_JSON} ORDER BY e.created_at DESC, e.id DESC), '[]')
   FROM (SELECT * FROM early_access_features WHERE ${MATCHES}
         ORDER BY created_at DESC, id DESC LIMIT $2 OFFSET $3) e
   LEFT JOIN feature_flags f ON f.id = e.feature_flag_id) AS rows`;

const ONE_SQL = `
SELECT ${FEATURE_JSON} AS j
FROM early_access_features e LEFT JOIN feature_flags f ON f.id = e.feature_flag_id
WHERE e.id = $1::uuid AND e.team_id = $2`;

type RawRow = Omit<EarlyAccessFeatureRow, 'createdAt'> & { createdAt: string };

function toRow(raw: RawRow): EarlyAccessFeatureRow {
  return { ...raw, createdAt: new Date(raw.createdAt) };
}

export function createEarlyAccessFeatureReadStore(pool: pg.Pool) {
  return {
    async list(
      teamId: number,
      page: Page,
      search?: string,
    ): Promise<{ count: number; rows: EarlyAccessFeatureRow[] }> {
      const r = (
        await pool.query<{ count: number; rows: RawRow[] }>(LIST_SQL, [
          teamId,
          page.limit,
          page.offset,
          search || null,
        ])
      ).rows[0]!;
      return { count: r.count, rows: r.rows.map(toRow) };
    },

    /** `id` must be a lower-case uuid. */
    async one(teamId: number, id: string): Promise<EarlyAccessFeatureRow | undefined> {
      const raw = (await pool.query<{ j: RawRow }>(ONE_SQL, [id, teamId])).rows[0]?.j;
      return raw ? toRow(raw) : undefined;
    },
  };
}
