// The docs check: what README.md and the pages under docs/ (and the services' and deploy's
// READMEs) say about the repository is checked against it, so a rename or a removed setting fails
// CI instead of leaving a page that misleads: every repository path they cite exists, every
// environment variable they name is one the code reads, every metric they name is one the code
// registers, and none cites an issue number or the machine a figure was taken on as "this
// machine".
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

const root = path.resolve(__dirname, '../..');
const ls = (...patterns: string[]) =>
  execFileSync('git', ['ls-files', '-co', '--exclude-standard', ...patterns], { cwd: root, encoding: 'utf8' })
    .split('\n')
    .filter((f) => f && !f.includes('node_modules/') && fs.existsSync(path.join(root, f)));

const DOCS = ls('README.md', 'docs/*.md', 'services/*/README.md', 'deploy/README.md').filter(
  // Generated from the route tables and checked by `pnpm routes --check`.
  (f) => f !== 'docs/compatibility.md',
);
const read = (f: string) => fs.readFileSync(path.join(root, f), 'utf8');

/** Each line of each doc, for messages that say where. */
function* lines(): Generator<{ where: string; line: string }> {
  for (const f of DOCS) {
    const text = read(f).split('\n');
    for (let i = 0; i < text.length; i++) yield { where: `${f}:${i + 1}`, line: text[i]! };
  }
}

/** A path git ignores (`dist/`, generated clients) exists once its build has run, not in a clone.
 * Asked as a file and as a folder, since ignore rules like `dist/` match folders only. */
function builtOutput(cited: string): boolean {
  const ignored = (p: string) => {
    try {
      execFileSync('git', ['check-ignore', '-q', '--no-index', p], { cwd: root });
      return true;
    } catch {
      return false;
    }
  };
  return ignored(cited) || ignored(`${cited.replace(/\/$/, '')}/`);
}

it('every repository path the docs cite exists', () => {
  const PATH = /(?<![\w./@-])((?:apps|packages|services|deploy|scripts|bench|prisma|docs)\/[\w./-]*[\w/])/g;
  const missing: string[] = [];
  for (const { where, line } of lines())
    for (const m of line.matchAll(PATH)) {
      const cited = m[1]!;
      // Placeholders (`services/<name>/…`) and globs stand for many paths.
      const next = line[(m.index ?? 0) + cited.length];
      if (next === '<' || next === '*' || next === '{' || next === ':') continue;
      if (!fs.existsSync(path.join(root, cited)) && !builtOutput(cited)) missing.push(`${where}: ${cited}`);
    }
  expect(missing).toEqual([]);
});

it('every environment variable the docs name is one the code reads', () => {
  const code = ls('*.ts', '*.mjs', '*.sh', '*.yml', '*.yaml', 'Dockerfile', '**/Dockerfile', '.ci/run')
    .filter((f) => !f.endsWith('.md'))
    .map(read)
    .join('\n');
  const known = new Set<string>();
  for (const m of code.matchAll(/\b([A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+)\b/g)) known.add(m[1]!);
  const unknown: string[] = [];
  // Named as settings: in backticks, upper case with an underscore.
  for (const { where, line } of lines())
    for (const m of line.matchAll(/`([A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+)(?:=[^`]*)?`/g))
      if (!known.has(m[1]!)) unknown.push(`${where}: ${m[1]}`);
  expect(unknown).toEqual([]);
});

it('every metric the docs name is one the code registers', () => {
  const code = ls('*.ts')
    .filter((f) => !f.includes('/test/') && !f.startsWith('bench/'))
    .map(read)
    .join('\n');
  const unknown: string[] = [];
  const METRIC = /`((?:sett|management|http)_[a-z0-9_]+)(?:\{[^`]*\})?`/g;
  for (const { where, line } of lines())
    for (const m of line.matchAll(METRIC)) {
      // A histogram's series carry suffixes its declaration does not.
      const base = m[1]!.replace(/_(bucket|sum|count)$/, '');
      if (!code.includes(`'${m[1]}'`) && !code.includes(`'${base}'`) && !code.includes(`\`${base}`))
        unknown.push(`${where}: ${m[1]}`);
    }
  expect(unknown).toEqual([]);
});

it('cites no issue number, and no machine as "this machine"', () => {
  const found: string[] = [];
  for (const { where, line } of lines())
    if (/\bissues? \d+\b|\bthe issue\b|\b(this|these|our|the development) machines?\b/i.test(line))
      found.push(`${where}: ${line.trim()}`);
  expect(found).toEqual([]);
});
