// Plain pg pools for the bulk paths (ingestion's multi-row inserts, decide's person reads),
// where one hand-written statement per batch beats going through the ORM.
import pg from 'pg';

/**
 * How long Postgres may take before the caller gets an error instead of a hang. Every service
 * passes its own (see @sett/config `database`); a pool without them waits forever on a
 * Postgres that accepts connections and never answers.
 */
export type PgTimeouts = {
  /** Opening a connection and waiting for a pooled one (pg's connectionTimeoutMillis). */
  connectTimeoutMs: number;
  /** Server-side statement_timeout; the client also gives up 1 s later (query_timeout). */
  statementTimeoutMs: number;
  /** Server-side idle_in_transaction_session_timeout (0 = off). */
  idleInTransactionTimeoutMs: number;
};

export type CreatePgPoolOptions = {
  databaseUrl: string;
  max?: number;
  /** Shows up in pg_stat_activity, which makes "who holds these connections" answerable. */
  applicationName?: string;
  /** Told about connections that fail outside a query (e.g. Postgres restarted, idle or
   * checked out between queries); they never crash the process. */
  onIdleError?: (err: Error) => void;
  timeouts?: PgTimeouts;
  /** Server settings for every session of the pool (`SET name = value` at connect), e.g.
   * max_parallel_workers_per_gather. Names and values are the operator's configuration. */
  sessionSettings?: Record<string, string | number>;
};

/** The pg.PoolConfig fields for `timeouts`, shared by plain pools and Prisma's adapter. */
export function pgTimeoutConfig(timeouts: PgTimeouts | undefined): pg.PoolConfig {
  if (!timeouts) return {};
  return {
    connectionTimeoutMillis: timeouts.connectTimeoutMs,
    statement_timeout: timeouts.statementTimeoutMs,
    // Client side: a server that stops answering never sends the statement_timeout error.
    query_timeout: timeouts.statementTimeoutMs + 1000,
    idle_in_transaction_session_timeout: timeouts.idleInTransactionTimeoutMs,
  };
}

export function createPgPool({
  databaseUrl,
  max,
  applicationName,
  onIdleError,
  timeouts,
  sessionSettings,
}: CreatePgPoolOptions): pg.Pool {
  const options = Object.entries(sessionSettings ?? {})
    .map(([name, value]) => `-c ${name}=${value}`)
    .join(' ');
  const pool = new pg.Pool({
    connectionString: databaseUrl,
    ...(options ? { options } : {}),
    ...(max ? { max } : {}),
    ...(applicationName ? { application_name: applicationName } : {}),
    ...pgTimeoutConfig(timeouts),
  });
  // An idle connection that Postgres terminates (restart, failover, pg_terminate_backend) makes
  // the pool emit 'error'; unhandled, that would crash the service. pg drops the broken client
  // and the next query opens a new connection, so reporting it is all there is to do.
  pool.on('error', (err) => onIdleError?.(err));
  // pg-pool listens for errors only on idle clients. A checked-out client whose connection
  // drops between two queries (a transaction in progress, Postgres restarting, a proxy giving
  // up) emits 'error' with no listener, and that would crash the process. Its next query
  // fails instead, and the pool discards it on release (it is no longer queryable).
  pool.on('connect', (client) => client.on('error', (err) => onIdleError?.(err)));
  return pool;
}

/**
 * Ends a pool and resolves once each of its connections has closed. pg's `end()` resolves as
 * soon as it has asked them to close, while the server may still hold the sessions: a
 * `DROP DATABASE … WITH (FORCE)` right after terminates them, and the termination arrives as an
 * 'error' on a pool that nobody listens to any more, which crashes the process (or fails a test
 * suite that had passed).
 */
export async function endPool(pool: pg.Pool): Promise<void> {
  const open = pool.totalCount;
  let removed = 0;
  const closed = new Promise<void>((resolve) => {
    if (open === 0) resolve();
    // 'remove' follows the client's own end callback, i.e. its socket has closed.
    pool.on('remove', () => {
      if (++removed >= open) resolve();
    });
  });
  await pool.end();
  await closed;
}
