// The version and git commit a running Sett reports (sett_build_info, /_health, sett --version):
// from a source checkout they are read from the workspace package.json and git.
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { buildInfo } from '../src';

const root = path.resolve(__dirname, '../../..');
const rootVersion = (require('../../../package.json') as { version: string }).version;

it('from the sources: the workspace version and the checked-out commit', () => {
  const head = execFileSync('git', ['rev-parse', 'HEAD'], { cwd: root, encoding: 'utf8' }).trim();
  expect(buildInfo()).toEqual({ version: rootVersion, gitSha: head });
});
