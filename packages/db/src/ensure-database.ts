// Creates the database named in a URL when it does not exist yet (local start, tests), by
// connecting to the server's `postgres` maintenance database.
import pg from 'pg';
import { parseDatabaseUrl } from './migration-adapter';

const DUPLICATE_DATABASE = '42P04';
const UNIQUE_VIOLATION = '23505'; // two concurrent CREATE DATABASE of the same name

/** Quotes an identifier for SQL (CREATE/DROP DATABASE cannot take parameters). */
export function quoteIdent(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}

/** Returns `databaseUrl` with its database name replaced. */
export function withDatabase(databaseUrl: string, database: string): string {
  const url = new URL(databaseUrl);
  url.pathname = `/${encodeURIComponent(database)}`;
  return url.toString();
}

/** Runs `fn` with a client connected to the `postgres` database of `databaseUrl`'s server. */
export async function withMaintenanceClient<T>(
  databaseUrl: string,
  fn: (client: pg.Client) => Promise<T>,
): Promise<T> {
  const client = new pg.Client({ connectionString: withDatabase(databaseUrl, 'postgres') });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

/** Creates the database of `databaseUrl` if absent. Returns true when it created it. */
export async function ensureDatabase(databaseUrl: string): Promise<boolean> {
  const { database } = parseDatabaseUrl(databaseUrl);
  return withMaintenanceClient(databaseUrl, async (client) => {
    const found = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [database]);
    if (found.rowCount) return false;
    try {
      await client.query(`CREATE DATABASE ${quoteIdent(database)}`);
      return true;
    } catch (error) {
      const code = (error as { code?: string }).code;
      // Someone else created it between our check and our CREATE: that is success too.
      if (code === DUPLICATE_DATABASE || code === UNIQUE_VIOLATION) return false;
      throw error;
    }
  });
}
