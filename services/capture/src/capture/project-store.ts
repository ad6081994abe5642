// The only Postgres read capture makes: a project token's team, on a token cache miss (the
// token resolver keeps it in process and in Redis, so the steady state makes no query).
import type { ProjectRef } from '@sett/cache';

export type Queryable = {
  query<R extends Record<string, unknown>>(text: string, values: unknown[]): Promise<{ rows: R[] }>;
};

export function createProjectLoader(db: Queryable): (token: string) => Promise<ProjectRef | null> {
  return async (token) => {
    const { rows } = await db.query<{ id: number; organization_id: string }>(
      'SELECT id, organization_id FROM teams WHERE api_token = $1',
      [token],
    );
    const row = rows[0];
    return row ? { teamId: row.id, organizationId: row.organization_id } : null;
  };
}
