// scripts/setup.sh's pnpm step on machines where getting pnpm fails: the operator must see why
// (the failing command's own output) and what to do, and a corepack-managed pnpm that refuses to
// download without COREPACK_INTEGRITY_KEYS=0 is made to work instead of stopping the setup.
// Fake pnpm, npm and corepack commands stand first on PATH; node is the real one.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const root = path.resolve(__dirname, '../../..');
const want = (
  JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8')) as { packageManager: string }
).packageManager.split('@')[1]!;

let dir: string;
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sett-setup-pnpm-'));
  fs.mkdirSync(path.join(dir, 'bin'));
  fs.mkdirSync(path.join(dir, 'corepack', 'shims'), { recursive: true });
  // Every fake records its calls, so a test can tell what setup tried.
  script('bin/corepack', 'echo "corepack $*" >> "$FAKE_LOG"; exit 0');
});
afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

function script(rel: string, body: string) {
  fs.writeFileSync(path.join(dir, rel), `#!/bin/sh\n${body}\n`, { mode: 0o755 });
}

/** A corepack shim: a `pnpm` on PATH that is a link into corepack's directory. */
function corepackShim(body: string) {
  script('corepack/shims/pnpm', body);
  fs.symlinkSync(path.join(dir, 'corepack/shims/pnpm'), path.join(dir, 'bin/pnpm'));
}

const PATH = () => `${path.join(dir, 'bin')}:${path.dirname(process.execPath)}:/usr/bin:/bin`;

function runSetup() {
  return spawnSync('bash', ['scripts/setup.sh'], {
    cwd: root,
    env: { PATH: PATH(), HOME: dir, FAKE_LOG: path.join(dir, 'log') },
    encoding: 'utf8',
    timeout: 30_000,
  });
}

function runStep() {
  const r = spawnSync(
    'bash',
    [
      '-c',
      'set -euo pipefail; source scripts/setup-pnpm.sh; ensure_pnpm "$1"; echo "keys=${COREPACK_INTEGRITY_KEYS:-unset}"',
      '_',
      want,
    ],
    {
      cwd: root,
      env: { PATH: PATH(), HOME: dir, FAKE_LOG: path.join(dir, 'log') },
      encoding: 'utf8',
      timeout: 30_000,
    },
  );
  return r;
}

const calls = () =>
  fs.existsSync(path.join(dir, 'log')) ? fs.readFileSync(path.join(dir, 'log'), 'utf8') : '';

describe('setup.sh pnpm step', () => {
  it('a failing npm install stops the setup with npm’s own output and a hint', () => {
    script('bin/pnpm', 'exit 127');
    script(
      'bin/npm',
      'echo "npm ERR! code EACCES" >&2; echo "npm ERR! path /usr/lib/node_modules/pnpm" >&2; exit 243',
    );
    const r = runSetup();
    expect(r.status).not.toBe(0);
    expect(r.stderr).toContain('npm ERR! code EACCES');
    expect(r.stderr).toContain('npm ERR! path /usr/lib/node_modules/pnpm');
    expect(r.stderr).toMatch(/hint: .*pnpm@/);
    // It stopped at pnpm: nothing after it (dependencies, databases) was attempted.
    expect(r.stderr).not.toContain('installing dependencies');
  });

  it('a corepack shim that refuses to download is retried with COREPACK_INTEGRITY_KEYS=0', () => {
    corepackShim(
      `if [ "$COREPACK_INTEGRITY_KEYS" = 0 ]; then echo ${want}; exit 0; fi\n` +
        'echo "Internal Error: No compatible signature found in package metadata" >&2; exit 1',
    );
    script('bin/npm', 'echo "npm $*" >> "$FAKE_LOG"; exit 1');
    const r = runStep();
    expect(r.stderr).toContain('corepack');
    expect(r.status).toBe(0);
    expect(r.stdout).toContain('keys=0');
    expect(calls()).not.toContain('npm install');
  });

  it('a corepack shim that cannot give pnpm at all is disabled, then pnpm comes from npm', () => {
    corepackShim('echo "Usage Error: network access disabled by the environment" >&2; exit 1');
    // npm installs a working pnpm into bin/ once corepack's link is gone.
    script(
      'bin/npm',
      `echo "npm $*" >> "$FAKE_LOG"\n[ -e "${dir}/bin/pnpm" ] && { echo "npm ERR! EEXIST ${dir}/bin/pnpm" >&2; exit 1; }\n` +
        `printf '#!/bin/sh\\necho ${want}\\n' > "${dir}/bin/pnpm"; chmod +x "${dir}/bin/pnpm"`,
    );
    script(
      'bin/corepack',
      `echo "corepack $*" >> "$FAKE_LOG"; [ "$1" = disable ] && rm -f "${dir}/bin/pnpm"; exit 0`,
    );
    const r = runStep();
    expect(r.stderr).toContain('network access disabled by the environment');
    expect(r.status).toBe(0);
    expect(calls()).toContain('corepack disable pnpm');
    expect(calls()).toContain(`npm install -g pnpm@${want}`);
  });

  it('a corepack shim that cannot be disabled ends with its output and a hint naming corepack', () => {
    corepackShim('echo "Usage Error: network access disabled by the environment" >&2; exit 1');
    script('bin/npm', 'echo "npm ERR! EEXIST: file already exists" >&2; exit 1');
    script('bin/corepack', 'echo "corepack: permission denied" >&2; exit 1');
    const r = runStep();
    expect(r.status).not.toBe(0);
    expect(r.stderr).toContain('network access disabled by the environment');
    expect(r.stderr).toContain('npm ERR! EEXIST');
    expect(r.stderr).toMatch(/hint: .*corepack disable pnpm/);
  });
});
