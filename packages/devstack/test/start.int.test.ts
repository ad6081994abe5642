// The whole local stack as `pnpm start` runs it: every service and the edge answer, the default
// project is bootstrapped on an empty database, an event and a flag evaluation go through the
// edge, and SIGINT stops every process the script started. Its stdout is a pipe here, so the
// personal API key must not appear in the output: it is in an owner-only credentials file.
import os from 'node:os';
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { createTestDatabase, type TestDatabase, freePort, waitFor } from '@sett/testing';

const root = path.resolve(__dirname, '../../..');

function processInfo(pid: number): string {
  try {
    return execFileSync('ps', ['-o', 'stat=,args=', '-p', String(pid)])
      .toString()
      .trim();
  } catch {
    return 'gone';
  }
}

/** A process's identity: its pid and start time. Pids are reused quickly on a busy machine. */
function startTime(pid: number): string | null {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19] ?? null;
  } catch {
    return null;
  }
}

describe('pnpm start (scripts/start.ts)', () => {
  let db: TestDatabase;
  let child: ChildProcess | undefined;
  let output = '';
  const credentialsDir = fs.mkdtempSync(path.join(os.tmpdir(), 'sett-start-'));
  const credentialsFile = path.join(credentialsDir, 'credentials.json');

  beforeAll(async () => {
    db = await createTestDatabase();
  });

  afterAll(async () => {
    if (child && child.exitCode === null) child.kill('SIGKILL');
    await db.drop();
    fs.rmSync(credentialsDir, { recursive: true, force: true });
  });

  it('starts everything behind the edge, bootstraps, and stops what it started', async () => {
    const ports = {
      edge: await freePort(),
      management: await freePort(),
      capture: await freePort(),
      decide: await freePort(),
      ingestion: await freePort(),
    };
    child = spawn(process.execPath, ['--import', 'tsx', path.join(root, 'scripts/start.ts')], {
      cwd: root,
      env: {
        ...process.env,
        DATABASE_URL: db.url,
        KAFKA_BROKERS: '', // the script starts its own development broker
        SETT_STARTED_NOTE: '', // the shared Postgres and Redis are not this stack's to stop
        SETT_PORT: String(ports.edge),
        MANAGEMENT_PORT: String(ports.management),
        CAPTURE_PORT: String(ports.capture),
        DECIDE_PORT: String(ports.decide),
        INGESTION_PORT: String(ports.ingestion),
        LOG_LEVEL: 'warn',
        SETT_CREDENTIALS_FILE: credentialsFile,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stdout!.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr!.on('data', (d: Buffer) => (output += d.toString()));

    await waitFor(
      `start to come up (its output so far below)`,
      () => {
        if (child!.exitCode !== null) throw new Error(`start exited with ${child!.exitCode}:\n${output}`);
        return output.includes('Press Ctrl-C to stop.');
      },
      { timeoutMs: 90_000, intervalMs: 200 },
    ).catch((err: Error) => {
      throw new Error(`${err.message}\n${output}`);
    });

    for (const port of Object.values(ports)) {
      const res = await fetch(`http://127.0.0.1:${port}/_health`);
      expect(res.status).toBe(200);
    }
    const projectKey = /project API key\s+(phc_\w+)/.exec(output)?.[1];
    expect(projectKey).toBeDefined();
    expect(output).toMatch(/project id\s+\d+/);
    // Not a terminal: the personal key only masked in the output, in full in a 0600 file that
    // the output names.
    expect(fs.statSync(credentialsFile).mode & 0o777).toBe(0o600);
    const saved = JSON.parse(fs.readFileSync(credentialsFile, 'utf8')) as Record<string, unknown>;
    const personalKey = saved.personal_api_key as string;
    expect(personalKey).toMatch(/^phx_\w{20,}$/);
    expect(saved.project_api_key).toBe(projectKey);
    expect(output).not.toContain(personalKey);
    expect(output).not.toMatch(/phx_\w{8,}/);
    expect(output).toContain(`phx_...${personalKey.slice(-4)}`);
    expect(output).toContain(credentialsFile);

    const edge = `http://127.0.0.1:${ports.edge}`;
    const captured = await fetch(`${edge}/i/v0/e/`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ api_key: projectKey, event: 'started', distinct_id: 'u1' }),
    });
    expect(captured.status).toBe(200);
    expect(await captured.json()).toEqual({ status: 1 });
    const decided = await fetch(`${edge}/decide/?v=4`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ api_key: projectKey, distinct_id: 'u1' }),
    });
    expect(decided.status).toBe(200);
    expect(await decided.json()).toMatchObject({ flags: {}, errorsWhileComputingFlags: false });
    const me = await fetch(`${edge}/api/users/@me/`, { headers: { authorization: `Bearer ${personalKey}` } });
    expect(me.status).toBe(200);
    expect(((await me.json()) as { email: string }).email).toBe('admin@sett.local');

    const pids = execFileSync('ps', ['-o', 'pid=', '--ppid', String(child.pid)])
      .toString()
      .trim()
      .split(/\s+/)
      .map(Number);
    expect(pids.length).toBeGreaterThanOrEqual(5); // four services and the broker

    const started = new Map(pids.map((pid) => [pid, startTime(pid)]));
    const alive = (pid: number) => startTime(pid) !== null && startTime(pid) === started.get(pid);
    const exited = new Promise<number | null>((resolve) => child!.once('exit', (code) => resolve(code)));
    child.kill('SIGINT');
    expect(await exited).toBe(0);
    // Every child was awaited before the script exited; allow the kernel a moment to finish
    // tearing them down on a loaded machine, then name any survivor.
    await waitFor('every child to be gone', () => !pids.some(alive), {
      timeoutMs: 5000,
      intervalMs: 100,
    }).catch(() => undefined);
    const survivors = pids.filter(alive).map((pid) => `${pid}: ${processInfo(pid)}`);
    expect(survivors).toEqual([]);
  });
});
