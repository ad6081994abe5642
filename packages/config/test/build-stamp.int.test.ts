// scripts/build.mjs stamps the version and git commit into the bundles, so an image (whose
// context has no .git) and a local build both report what they were built from: the CLI's
// --version and a service's /_health, run from the compiled files with plain node.
import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import readline from 'node:readline';

const root = path.resolve(__dirname, '../../..');
const rootVersion = (require('../../../package.json') as { version: string }).version;
let out: string;

beforeAll(() => {
  // Inside the checkout (.sett/ is ignored by git): the bundles load their third-party packages
  // from the workspace's node_modules, found by walking up from where they are.
  fs.mkdirSync(path.join(root, '.sett'), { recursive: true });
  out = fs.mkdtempSync(path.join(root, '.sett', 'build-test-'));
  execFileSync(process.execPath, ['scripts/build.mjs', '--dist', out], {
    cwd: root,
    env: { ...process.env, SETT_GIT_SHA: 'feedc0de'.repeat(5) },
    stdio: 'pipe',
  });
}, 60_000);
afterAll(() => fs.rmSync(out, { recursive: true, force: true }));

it('sett --version prints the stamped version and commit', () => {
  const text = execFileSync(process.execPath, [path.join(out, 'cli.cjs'), '--version'], {
    cwd: root,
    encoding: 'utf8',
  });
  expect(text.trim()).toBe(`sett ${rootVersion} (${'feedc0de'.repeat(5)})`);
});

it('a compiled service reports them on /_health and in sett_build_info', async () => {
  // Nothing listens on port 1: management starts anyway and reports its dependencies on /_ready.
  const child = spawn(process.execPath, [path.join(out, 'management.cjs')], {
    cwd: root,
    env: {
      ...process.env,
      NODE_ENV: 'test',
      MANAGEMENT_PORT: '0',
      DATABASE_URL: 'postgresql://build@127.0.0.1:1/build',
      REDIS_URL: 'redis://127.0.0.1:1',
      LOG_FORMAT: 'json',
      LOG_LEVEL: 'info',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  try {
    const port = await new Promise<number>((resolve, reject) => {
      readline.createInterface({ input: child.stdout! }).on('line', (l) => {
        const m = /management ready.*"port":(\d+)/.exec(l);
        if (m) resolve(Number(m[1]));
      });
      child.once('exit', (code) => reject(new Error(`management exited ${code}`)));
    });
    const health = (await (await fetch(`http://127.0.0.1:${port}/_health`)).json()) as Record<
      string,
      unknown
    >;
    expect(health).toMatchObject({ status: 'ok', version: rootVersion, git_sha: 'feedc0de'.repeat(5) });
    const metrics = await (await fetch(`http://127.0.0.1:${port}/_metrics`)).text();
    expect(metrics).toMatch(new RegExp(`sett_build_info\\{[^}]*git_sha="${'feedc0de'.repeat(5)}"[^}]*\\} 1`));
  } finally {
    child.kill('SIGKILL');
  }
});
