// The real services as separate processes (each service's own main.ts, its real composition),
// over one test database, Redis and a private development broker, on free local ports. A
// process that dies is noticed (exit code, last lines of output) instead of taking the test
// runner with it, and a hung one can be killed.
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { freePort } from '@sett/testing';

export const SERVICES = ['capture', 'decide', 'management', 'ingestion'] as const;
export type ServiceName = (typeof SERVICES)[number];

const root = path.resolve(__dirname, '../../..');

export interface RunningProcess {
  name: ServiceName;
  port: number;
  url: string;
  child: ChildProcess;
  /** Set once the process has exited: code or signal. */
  exited?: string;
  /** The last lines the process wrote (stdout and stderr). */
  tail(): string;
}

export async function startProcesses(
  env: Record<string, string>,
): Promise<Record<ServiceName, RunningProcess>> {
  const ports = {} as Record<ServiceName, number>;
  for (const name of SERVICES) ports[name] = await freePort();
  const portEnv = {
    CAPTURE_PORT: String(ports.capture),
    DECIDE_PORT: String(ports.decide),
    MANAGEMENT_PORT: String(ports.management),
    INGESTION_PORT: String(ports.ingestion),
  };
  const out = {} as Record<ServiceName, RunningProcess>;
  for (const name of SERVICES) {
    const child = spawn(
      process.execPath,
      ['--import', 'tsx', path.join(root, 'services', name, 'src', 'main.ts')],
      {
        cwd: root,
        env: { ...process.env, ...env, ...portEnv, HOST: '127.0.0.1' },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    const lines: string[] = [];
    const keep = (d: Buffer) => {
      for (const line of d.toString('utf8').split('\n')) if (line) lines.push(line.slice(0, 2000));
      if (lines.length > 60) lines.splice(0, lines.length - 60);
    };
    child.stdout!.on('data', keep);
    child.stderr!.on('data', keep);
    const p: RunningProcess = {
      name,
      port: ports[name],
      url: `http://127.0.0.1:${ports[name]}`,
      child,
      tail: () => lines.join('\n'),
    };
    child.on('exit', (code, signal) => (p.exited = signal ?? String(code)));
    out[name] = p;
  }
  return out;
}

/** GET a status path; undefined when there is no answer within timeoutMs. */
export async function getStatus(url: string, timeoutMs = 5000): Promise<number | undefined> {
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(timeoutMs) });
    await res.arrayBuffer();
    return res.status;
  } catch {
    return undefined;
  }
}

export async function waitUntil(
  what: string,
  check: () => Promise<boolean>,
  timeoutMs: number,
  describe?: () => string,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline)
      throw new Error(
        `timed out after ${timeoutMs} ms waiting for ${what}${describe ? `\n${describe()}` : ''}`,
      );
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** SIGTERM, then SIGKILL for a process that does not leave (a blocked event loop ignores SIGTERM's handler). */
export async function stopProcess(p: RunningProcess, graceMs = 3000): Promise<void> {
  if (p.exited !== undefined) return;
  const gone = new Promise<void>((r) => p.child.once('exit', () => r()));
  p.child.kill('SIGTERM');
  const timer = setTimeout(() => p.child.kill('SIGKILL'), graceMs);
  await gone;
  clearTimeout(timer);
}
