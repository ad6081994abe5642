// docs/configuration.md and the settings the code reads agree: every environment variable that
// loadConfig (packages/config) reads is in the page's table, and every variable the table lists
// is one loadConfig reads. The set is taken from loadConfig itself (an environment that records
// what is asked of it), so a setting added to the code without a line in the table, or a line
// left for a setting that is gone, fails CI.
import fs from 'node:fs';
import path from 'node:path';
import { loadConfig } from '@sett/config';

const root = path.resolve(__dirname, '../..');

function settingsRead(extra: Record<string, string> = {}): Set<string> {
  const seen = new Set<string>();
  const env = new Proxy({} as Record<string, string | undefined>, {
    get(_t, k) {
      if (typeof k === 'string') seen.add(k);
      return typeof k === 'string' ? extra[k] : undefined;
    },
  });
  loadConfig(env as NodeJS.ProcessEnv);
  return seen;
}

function documented(): Set<string> {
  const text = fs.readFileSync(path.join(root, 'docs/configuration.md'), 'utf8');
  const names = new Set<string>();
  for (const line of text.split('\n')) {
    const first = /^\| ([^|]+) \|/.exec(line)?.[1];
    if (!first) continue;
    for (const m of first.matchAll(/`([A-Z][A-Z0-9_]+)`/g)) names.add(m[1]!);
  }
  return names;
}

it('every setting the code reads is in the table of docs/configuration.md', () => {
  const read = settingsRead();
  // NODE_ENV is Node's own convention, documented where it matters (tests, start).
  read.delete('NODE_ENV');
  const table = documented();
  expect([...read].filter((n) => !table.has(n)).sort()).toEqual([]);
});

it('every setting the table lists is one the code reads', () => {
  const read = settingsRead();
  const table = documented();
  expect([...table].filter((n) => !read.has(n)).sort()).toEqual([]);
});
