// The pool survives Postgres terminating its idle connections (as on a restart or failover).
import { createPgPool } from '../src';

describe('createPgPool', () => {
  // Any database will do: the test only opens and loses connections.
  const databaseUrl = process.env.DATABASE_URL ?? 'postgresql://root@127.0.0.1:5432/postgres';
  const name = `pool-test-${process.pid}`;

  it('reports idle connection errors instead of crashing, and keeps serving queries', async () => {
    const errors: Error[] = [];
    const pool = createPgPool({
      databaseUrl: databaseUrl,
      max: 2,
      applicationName: name,
      onIdleError: (e) => errors.push(e),
    });
    await pool.query('SELECT 1');
    const admin = createPgPool({ databaseUrl: databaseUrl, max: 1 });
    await admin.query(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1`, [
      name,
    ]);
    await admin.end();
    for (let i = 0; i < 50 && errors.length === 0; i++) await new Promise((r) => setTimeout(r, 20));
    expect(errors.length).toBeGreaterThan(0);
    const { rows } = await pool.query<{ one: number }>('SELECT 1 AS one');
    expect(rows[0]?.one).toBe(1);
    await pool.end();
  });

  it('survives a checked-out client losing its connection between queries, and discards it', async () => {
    let reported!: (e: Error) => void;
    const error = new Promise<Error>((r) => (reported = r));
    const pool = createPgPool({
      databaseUrl,
      max: 1,
      applicationName: `${name}-out`,
      onIdleError: (e) => reported(e),
    });
    const client = await pool.connect();
    await client.query('BEGIN');
    const admin = createPgPool({ databaseUrl, max: 1 });
    await admin.query(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1`, [
      `${name}-out`,
    ]);
    await admin.end();
    // Without a listener on the checked-out client this 'error' event would crash the process.
    expect((await error).message).toMatch(/terminat/i);
    await expect(client.query('SELECT 1')).rejects.toThrow();
    client.release();
    const { rows } = await pool.query<{ one: number }>('SELECT 1 AS one');
    expect(rows[0]?.one).toBe(1);
    await pool.end();
  });
});
