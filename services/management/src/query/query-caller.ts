// Who a query runs for: the user, the project, its time zone and its test account filters
// (one read of the project row), as the query runner needs them. Shared by /query/, insights
// and dashboards.
import type pg from 'pg';
import type { QueryCaller } from './run-query';

export async function queryCallerFor(pool: pg.Pool, userId: number, teamId: number): Promise<QueryCaller> {
  const { rows } = await pool.query<{ timezone: string; test_account_filters: unknown }>(
    'SELECT timezone, test_account_filters FROM teams WHERE id = $1',
    [teamId],
  );
  return {
    userId,
    teamId,
    timeZone: rows[0]?.timezone ?? 'UTC',
    testAccountFilters: rows[0]?.test_account_filters ?? [],
  };
}

/** Aborted when the client that asked goes away before its answer. */
export function abortOnClientGone(reply: {
  raw: { once(event: 'close', f: () => void): unknown; writableFinished: boolean };
}): AbortSignal {
  const gone = new AbortController();
  reply.raw.once('close', () => {
    if (!reply.raw.writableFinished) gone.abort();
  });
  return gone.signal;
}
