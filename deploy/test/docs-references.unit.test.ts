// The README, docs, comments and tests cite only what the repository holds: no document outside
// it (the interface description is docs/interface.md), no numbered sections of one ("spec 7.1"),
// and every docs/*.md they name exists. docs/interface.md keeps the markers the generated
// endpoint table goes between.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

const root = path.resolve(__dirname, '../..');
const files = execFileSync(
  'git',
  ['ls-files', '-co', '--exclude-standard', '*.ts', '*.md', '*.mjs', '*.sh'],
  {
    cwd: root,
    encoding: 'utf8',
  },
)
  .split('\n')
  .filter(
    (f) =>
      f && !f.includes('node_modules/') && !f.includes('/generated/') && fs.existsSync(path.join(root, f)),
  );

const OUTSIDE = [/shared\/spec/, /\bspec (section )?\d/i, /\bspec section\b/i, /spec\/interface\.md/];

it('cites no document outside the repository', () => {
  const found: string[] = [];
  for (const f of files) {
    if (f === 'deploy/test/docs-references.unit.test.ts') continue;
    fs.readFileSync(path.join(root, f), 'utf8')
      .split('\n')
      .forEach((line, i) => {
        if (OUTSIDE.some((re) => re.test(line))) found.push(`${f}:${i + 1}: ${line.trim()}`);
      });
  }
  expect(found).toEqual([]);
});

// Named before they are written, by work in progress elsewhere; each entry says whose.
const PENDING: Record<string, string> = {
  'docs/compatibility.md': 'the route-table rework (issue 20) generates it; remove this entry when it lands',
};

it('every docs/*.md named exists', () => {
  const missing = new Set<string>();
  for (const f of files)
    for (const m of fs.readFileSync(path.join(root, f), 'utf8').matchAll(/\bdocs\/[a-z0-9-]+\.md\b/g))
      if (!fs.existsSync(path.join(root, m[0])) && !(m[0] in PENDING)) missing.add(`${f}: ${m[0]}`);
  expect([...missing]).toEqual([]);
});

it('docs/interface.md has the markers for the generated endpoint table', () => {
  const text = fs.readFileSync(path.join(root, 'docs/interface.md'), 'utf8');
  const begin = text.indexOf('<!-- BEGIN GENERATED ROUTES -->');
  const end = text.indexOf('<!-- END GENERATED ROUTES -->');
  expect(begin).toBeGreaterThan(0);
  expect(end).toBeGreaterThan(begin);
});
