// `npm start` and the browser tests build the console (apps/console) when it is stale: when its
// built index.html is missing, or older than any of its sources. The build is quick (well under
// a few seconds) and prints the bundle's size against its budget.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

const appDir = path.resolve(__dirname, '../../../apps/console');

function newest(entry: string): number {
  const st = fs.statSync(entry);
  if (!st.isDirectory()) return st.mtimeMs;
  let max = st.mtimeMs;
  for (const name of fs.readdirSync(entry)) max = Math.max(max, newest(path.join(entry, name)));
  return max;
}

/** Whether dist/ is older than what it is built from. */
export function consoleIsStale(dir = appDir): boolean {
  const built = path.join(dir, 'dist', 'index.html');
  if (!fs.existsSync(built)) return true;
  const sources = ['src', 'index.html', 'build.mjs', 'package.json'].map((f) => path.join(dir, f));
  const latest = Math.max(...sources.filter((f) => fs.existsSync(f)).map(newest));
  return latest > fs.statSync(built).mtimeMs;
}

/** Builds the console if it is stale; the build's output goes to `log`. Throws when it fails. */
export function ensureConsoleBuilt(log: (line: string) => void = () => undefined): 'built' | 'fresh' {
  if (!consoleIsStale()) return 'fresh';
  const out = execFileSync(process.execPath, [path.join(appDir, 'build.mjs')], {
    cwd: appDir,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  for (const line of out.split('\n').filter(Boolean)) log(line);
  return 'built';
}
