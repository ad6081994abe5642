// The pool survives Postgres terminating its idle connections (as on a restart or failover), and
// endPool waits until the connections have closed.
import type net from 'node:net';
import type pg from 'pg';
import { createPgPool, endPool } from '../src';

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

  it('endPool resolves only once every connection of the pool has closed its socket', async () => {
    const pool = createPgPool({ databaseUrl, max: 3 });
    const clients: pg.PoolClient[] = [];
    pool.on('connect', (c) => clients.push(c));
    const held = await Promise.all([pool.connect(), pool.connect(), pool.connect()]);
    for (const c of held) c.release();
    expect(clients).toHaveLength(3);
    const socket = (c: pg.PoolClient) =>
      (c as unknown as { connection: { stream: net.Socket } }).connection.stream;
    expect(clients.every((c) => !socket(c).destroyed)).toBe(true);
    // pg's own end() resolves while these sockets are still open; a DROP DATABASE … WITH (FORCE)
    // in that window cuts the sessions and the pool emits 'error' with nobody listening.
    await endPool(pool);
    expect(clients.map((c) => socket(c).destroyed)).toEqual([true, true, true]);
  });
});
