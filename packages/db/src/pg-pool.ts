// Plain pg pools for the bulk paths (ingestion's multi-row inserts, decide's person reads),
// where one hand-written statement per batch beats going through the ORM.
import pg from 'pg';

export type CreatePgPoolOptions = {
  databaseUrl: string;
  max?: number;
  /** Shows up in pg_stat_activity, which makes "who holds these connections" answerable. */
  applicationName?: string;
};

export function createPgPool({ databaseUrl, max, applicationName }: CreatePgPoolOptions): pg.Pool {
  return new pg.Pool({
    connectionString: databaseUrl,
    ...(max ? { max } : {}),
    ...(applicationName ? { application_name: applicationName } : {}),
  });
}
