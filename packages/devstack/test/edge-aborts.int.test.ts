// Aborted requests free both sockets at once (issue 23, defect 1). 3,000 clients each send
// `POST /flags/?v=2` with `Content-Length: 100000`, one byte of body, then close, through the
// dev edge to a real decide (both in processes of their own). Shortly after, neither process
// holds a socket in CLOSE-WAIT and both are back near the file descriptors they started with.
// Sockets are counted from /proc/<pid>/fd and /proc/net/tcp{,6}. Loopback only; bounded in count
// (3,000, 100 at a time) and time (each client waits 3 s at most for the edge to close).
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import readline from 'node:readline';
import { createTestDatabase, freePort, type TestDatabase } from '@sett/testing';

jest.setTimeout(120_000);
const root = path.resolve(__dirname, '../../..');
const CLOSE_WAIT = '08';

/** File descriptors of a process and how many of its TCP sockets are in CLOSE-WAIT. */
function socketsOf(pid: number): { fds: number; closeWait: number } {
  const inodes = new Set<string>();
  let fds = 0;
  for (const fd of fs.readdirSync(`/proc/${pid}/fd`)) {
    fds++;
    try {
      const m = /^socket:\[(\d+)\]$/.exec(fs.readlinkSync(`/proc/${pid}/fd/${fd}`));
      if (m) inodes.add(m[1]!);
    } catch {
      // closed meanwhile
    }
  }
  let closeWait = 0;
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    for (const line of fs.readFileSync(table, 'utf8').split('\n').slice(1)) {
      const f = line.trim().split(/\s+/);
      if (f[3] === CLOSE_WAIT && inodes.has(f[9]!)) closeWait++;
    }
  }
  return { fds, closeWait };
}

function start(
  args: string[],
  env: NodeJS.ProcessEnv,
  ready: RegExp,
): Promise<{ child: ChildProcess; match: RegExpExecArray }> {
  const child = spawn(process.execPath, ['--import', 'tsx', ...args], {
    cwd: root,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const lines: string[] = [];
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`not ready:\n${lines.join('\n')}`)), 60_000);
    child.once('exit', (code) => reject(new Error(`exited with ${code}:\n${lines.join('\n')}`)));
    for (const s of [child.stdout!, child.stderr!])
      readline.createInterface({ input: s }).on('line', (l) => {
        lines.push(l);
        const match = ready.exec(l);
        if (match) {
          clearTimeout(timer);
          resolve({ child, match });
        }
      });
  });
}

async function until(check: () => boolean, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (check()) return true;
    await new Promise((r) => setTimeout(r, 100));
  }
  return check();
}

/** One client: the head, one byte of a 100,000-byte body, then its FIN. Resolves true when the
 * edge closed the connection within 3 s. */
function abortedRequest(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    const timer = setTimeout(() => {
      socket.destroy();
      resolve(false);
    }, 3_000);
    socket.on('connect', () =>
      socket.end(
        'POST /flags/?v=2 HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n' +
          'Content-Length: 100000\r\n\r\n{',
      ),
    );
    socket.on('data', () => undefined);
    socket.on('error', () => undefined);
    socket.on('close', () => {
      clearTimeout(timer);
      resolve(true);
    });
  });
}

let db: TestDatabase;
const children: ChildProcess[] = [];

beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => {
  for (const c of children.reverse()) {
    if (c.exitCode !== null) continue;
    const exited = new Promise((r) => c.once('exit', r));
    c.kill('SIGTERM');
    await exited;
  }
  await db?.drop();
});

it('3,000 aborted bodies leave no CLOSE-WAIT socket on the edge or decide', async () => {
  const decidePort = await freePort();
  const decide = await start(
    ['services/decide/src/main.ts'],
    {
      ...process.env,
      DATABASE_URL: db.url,
      DECIDE_PORT: String(decidePort),
      DECIDE_GEOIP_ENABLED: 'false',
      LOG_LEVEL: 'info',
      LOG_FORMAT: 'json',
    },
    /"message":"decide ready"/,
  );
  children.push(decide.child);
  const edge = await start(
    ['packages/devstack/test/support/edge-process.ts'],
    { ...process.env, SETT_TEST_EDGE: JSON.stringify({ upstream: decidePort }) },
    /^edge ready (\d+)$/,
  );
  children.push(edge.child);
  const edgePort = Number(edge.match[1]);
  const pids = { edge: edge.child.pid!, decide: decide.child.pid! };
  const before = { edge: socketsOf(pids.edge), decide: socketsOf(pids.decide) };

  let closedByEdge = 0;
  let next = 0;
  const worker = async () => {
    while (next < 3_000) {
      next++;
      if (await abortedRequest(edgePort)) closedByEdge++;
    }
  };
  await Promise.all(Array.from({ length: 100 }, worker));
  // The edge closed every one of them itself, at once.
  expect(closedByEdge).toBe(3_000);

  const settled = await until(() => {
    const e = socketsOf(pids.edge);
    const d = socketsOf(pids.decide);
    return (
      e.closeWait + d.closeWait === 0 && e.fds <= before.edge.fds + 20 && d.fds <= before.decide.fds + 20
    );
  }, 5_000);
  const after = { edge: socketsOf(pids.edge), decide: socketsOf(pids.decide) };
  expect({ settled, before, after }).toEqual({
    settled: true,
    before,
    after: {
      edge: { fds: expect.any(Number), closeWait: 0 },
      decide: { fds: expect.any(Number), closeWait: 0 },
    },
  });

  // Decide still answers through the edge afterwards.
  const res = await fetch(`http://127.0.0.1:${edgePort}/flags/?v=2`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ api_key: 'phc_unknown_project_key_000000', distinct_id: 'u' }),
  });
  expect(res.status).toBeLessThan(500);
});
