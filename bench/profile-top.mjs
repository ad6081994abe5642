// Prints the heaviest functions of a .cpuprofile (from bench/cpu-profile-preload.mjs or
// --cpu-prof) by self time, with their share of the samples that were not idle:
//   node bench/profile-top.mjs <file.cpuprofile> [count]
// Frames of one function at different call sites are added up; `(program)`, `(idle)` and
// `(garbage collector)` are V8's own buckets.
import fs from 'node:fs';

const [file, countArg] = process.argv.slice(2);
if (!file) {
  process.stderr.write('usage: node bench/profile-top.mjs <file.cpuprofile> [count]\n');
  process.exit(2);
}
const profile = JSON.parse(fs.readFileSync(file, 'utf8'));
const byId = new Map(profile.nodes.map((n) => [n.id, n]));
const samples = new Map();
for (const id of profile.samples) samples.set(id, (samples.get(id) ?? 0) + 1);

const totals = new Map();
let busy = 0;
for (const [id, count] of samples) {
  const { callFrame } = byId.get(id);
  if (callFrame.functionName === '(idle)') continue;
  busy += count;
  const where = callFrame.url
    ? callFrame.url
        .replace(/^.*node_modules\/(\.pnpm\/[^/]+\/node_modules\/)?/, '')
        .replace(/^file:\/\/.*?\/(packages|services)\//, '$1/')
    : '';
  const key = `${callFrame.functionName || '(anonymous)'} ${where}${where ? `:${callFrame.lineNumber + 1}` : ''}`;
  totals.set(key, (totals.get(key) ?? 0) + count);
}
const rows = [...totals].sort((a, b) => b[1] - a[1]).slice(0, Number(countArg ?? 25));
process.stdout.write(`${busy} busy samples\n| self % | function |\n|---|---|\n`);
for (const [key, count] of rows)
  process.stdout.write(`| ${((100 * count) / busy).toFixed(1)} | \`${key}\` |\n`);
