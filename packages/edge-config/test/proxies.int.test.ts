// The generated nginx and Caddy configs, run by the real binaries against stand-in services:
// every probe of the routing reaches its service with its path unchanged, near misses get the
// edge's JSON 404, forwarded fields and request ids are set, body limits answer 413 and a service
// that is down 503 (scripts/proxy-test.ts). deploy/validate.sh fetches both binaries from Debian's
// packages when they are missing; here a missing binary is reported and its test skipped.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { runProxyTest, type ProxyKind } from '../../../scripts/proxy-test';

jest.setTimeout(120_000);
const root = path.resolve(__dirname, '../../..');

function find(kind: ProxyKind): string | undefined {
  const candidates = [path.join(root, '.sett/tools', kind === 'nginx' ? 'usr/sbin/nginx' : 'usr/bin/caddy')];
  try {
    candidates.unshift(execFileSync('sh', ['-c', `command -v ${kind}`], { encoding: 'utf8' }).trim());
  } catch {
    // not on PATH
  }
  if (kind === 'nginx') candidates.push('/usr/sbin/nginx');
  return candidates.find((c) => c && fs.existsSync(c));
}

describe.each(['nginx', 'caddy'] as ProxyKind[])('%s with the generated config', (kind) => {
  const bin = find(kind);
  if (!bin) process.stderr.write(`${kind} not installed: its config is only checked by deploy/validate.sh\n`);
  (bin ? it : it.skip)('routes every probe and answers like the services expect', async () => {
    expect(await runProxyTest(kind, bin!)).toEqual([]);
  });
});
