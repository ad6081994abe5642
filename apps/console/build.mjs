// Builds the console with Vite into dist/, then checks the bundle budget: the JavaScript a first
// visit loads (the entry chunk and every chunk it imports statically), gzipped, must stay within
// 250 KB. The build prints the figure, and exits 1 above the budget, which fails CI.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import zlib from 'node:zlib';
import { build } from 'vite';

const root = path.dirname(fileURLToPath(import.meta.url));
const BUDGET = 250 * 1024;

await build({
  root,
  logLevel: 'warn',
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    manifest: true,
    sourcemap: false,
    target: 'es2022',
    rolldownOptions: {
      // TanStack Query marks its modules "use client" for server components; a plain browser
      // bundle has nothing to preserve there.
      onwarn(warning, warn) {
        if (warning.code !== 'MODULE_LEVEL_DIRECTIVE') warn(warning);
      },
    },
  },
});

const dist = path.join(root, 'dist');
const manifest = JSON.parse(fs.readFileSync(path.join(dist, '.vite', 'manifest.json'), 'utf8'));
const entry = Object.keys(manifest).find((k) => manifest[k].isEntry);
const initial = new Set();
const visit = (key) => {
  const chunk = manifest[key];
  if (!chunk || initial.has(chunk.file)) return;
  initial.add(chunk.file);
  for (const dep of chunk.imports ?? []) visit(dep);
};
visit(entry);
let gzipped = 0;
for (const file of initial)
  gzipped += zlib.gzipSync(fs.readFileSync(path.join(dist, file)), { level: 9 }).length;
const kb = (n) => `${(n / 1024).toFixed(1)} KB`;
console.log(
  `console: initial JavaScript ${kb(gzipped)} gzipped (budget ${kb(BUDGET)}), ${initial.size} file(s)`,
);
if (gzipped > BUDGET) {
  console.error(`console: over the bundle budget by ${kb(gzipped - BUDGET)}`);
  process.exit(1);
}
