// Plain pg pools for the bulk paths (ingestion's multi-row inserts, decide's person reads),
// where one hand-written statement per batch beats going through the ORM.
import pg from 'pg';

export type CreatePgPoolOptions = {
  databaseUrl: string;
  max?: number;
  /** Shows up in pg_stat_activity, which makes "who holds these connections" answerable. */
  applicationName?: string;
  /** Told about errors of idle connections (e.g. Postgres restarted); they never crash the process. */
  onIdleError?: (err: Error) => void;
};

export function createPgPool({
  databaseUrl,
  max,
  applicationName,
  onIdleError,
}: CreatePgPoolOptions): pg.Pool {
  const pool = new pg.Pool({
    connectionString: databaseUrl,
    ...(max ? { max } : {}),
    ...(applicationName ? { application_name: applicationName } : {}),
  });
  // An idle connection that Postgres terminates (restart, failover, pg_terminate_backend) makes
  // the pool emit 'error'; unhandled, that would crash the service. pg drops the broken client
  // and the next query opens a new connection, so reporting it is all there is to do.
  pool.on('error', (err) => onIdleError?.(err));
  return pool;
}
