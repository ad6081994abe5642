#!/usr/bin/env node
// Compiles Sett for production: one CommonJS bundle per entry point in dist/, so containers run
// `node dist/<entry>.cjs` with no TypeScript loader. Used by deploy/docker/Dockerfile and
// checked by deploy/validate.sh.
//
//   node scripts/build.mjs                  # bundles into dist/
//   node scripts/build.mjs --runtime <dir>  # also lays out a runnable tree in <dir>: the bundles,
//                                           # the Prisma schema and migrations, the built web
//                                           # console (apps/console/dist), and only the
//                                           # node_modules the bundles import (prod closure)
//   node scripts/build.mjs --dist <dir>     # bundles into <dir> instead of dist/ (tests)
//
// The bundles carry the version (root package.json) and git commit they were built from, for
// sett_build_info, /_health and `sett --version` (packages/config/src/build-info.ts): the commit
// is SETT_GIT_SHA when set (the Docker build passes it: its context has no .git), else
// `git rev-parse HEAD`, else "unknown".
//
// What is inlined and what is not: every @sett/* workspace package (they are TypeScript source,
// the generated Prisma client included) is compiled into the bundle; every third-party package
// stays external and is loaded from node_modules at run time, exactly the version the lockfile
// installed. `--runtime` copies that closure out of node_modules/.pnpm by following the symlinks
// pnpm made, so the runtime tree needs no second install and no network.
//
// Needs the workspace installed (`pnpm install`) and the Prisma client generated (postinstall).
import {
  cpSync,
  existsSync,
  mkdirSync,
  readFileSync,
  readdirSync,
  realpathSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { execFileSync } from 'node:child_process';
import { createRequire, isBuiltin } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const distFlag = process.argv.indexOf('--dist');
const dist = distFlag !== -1 ? path.resolve(process.argv[distFlag + 1] ?? '') : path.join(root, 'dist');
if (distFlag !== -1 && !process.argv[distFlag + 1]) throw new Error('--dist needs a directory');

// esbuild is the compiler inside tsx (a pinned root devDependency), so the build uses the very
// version the tests ran through, without a second copy in the lockfile.
const esbuild = createRequire(createRequire(path.join(root, 'package.json')).resolve('tsx/package.json'))(
  'esbuild',
);

/** dist/<name>.cjs <- source. */
const ENTRIES = {
  capture: 'services/capture/src/main.ts',
  decide: 'services/decide/src/main.ts',
  management: 'services/management/src/main.ts',
  ingestion: 'services/ingestion/src/main.ts',
  cli: 'packages/cli/src/main.ts',
  'wait-for-migrations': 'scripts/wait-for-migrations.ts',
  'partition-events-online': 'scripts/partition-events-online.ts',
};

// The Prisma CLI's config, compiled so `prisma migrate deploy --config dist/prisma.config.cjs`
// needs no TypeScript either. Built on its own: Prisma's loader wants the config object itself
// as module.exports, not an ES module namespace ({ __esModule, default }).
const PRISMA_CONFIG = 'prisma.config.ts';

// Packages needed at run time that no bundle imports: the Prisma CLI runs migrations
// (`node node_modules/prisma/build/index.js migrate deploy`, see deploy/docker/Dockerfile).
const EXTRA_RUNTIME_PACKAGES = ['prisma'];

// Packages that are only read as files, never loaded as code: decide serves posthog-js's
// browser bundles from its dist/ folder. Their own dependencies are left out.
const FILES_ONLY_PACKAGES = new Set(['posthog-js']);

/**
 * Workspace sources are bundled into dist/, so `__dirname` inside them would name dist/ instead of
 * their own folder. Each use is rewritten to the folder the file lives in, relative to the bundle,
 * which keeps paths such as packages/db's `../../../prisma/migrations` pointing where they did.
 */
const dirnamePlugin = {
  name: 'sett-dirname',
  setup(build) {
    build.onLoad({ filter: /\.ts$/ }, (args) => {
      if (args.path.includes(`${path.sep}node_modules${path.sep}`)) return undefined;
      const source = readFileSync(args.path, 'utf8');
      if (!source.includes('__dirname')) return undefined;
      const rel = path.relative(dist, path.dirname(args.path)).split(path.sep).join('/');
      const replaced = source.replace(
        /\b__dirname\b/g,
        `require('node:path').join(__dirname, ${JSON.stringify(rel)})`,
      );
      return { contents: replaced, loader: 'ts' };
    });
  },
};

/** Keeps third-party packages external; workspace packages (@sett/*) and relative files are inlined. */
const externalsPlugin = {
  name: 'sett-externals',
  setup(build) {
    build.onResolve({ filter: /^[^./]/ }, (args) => {
      if (args.path.startsWith('@sett/') || args.path.startsWith('node:')) return undefined;
      return { path: args.path, external: true };
    });
  },
};

function packageName(specifier) {
  const parts = specifier.split('/');
  return specifier.startsWith('@') ? `${parts[0]}/${parts[1]}` : parts[0];
}

/** The folder of `name` as node would find it from `fromDir` (walking up node_modules). */
function findPackageDir(name, fromDir) {
  for (let dir = fromDir; ; dir = path.dirname(dir)) {
    const candidate = path.join(dir, 'node_modules', name);
    if (existsSync(path.join(candidate, 'package.json'))) return candidate;
    if (dir === path.dirname(dir)) return undefined;
  }
}

/** What packages/config's buildInfo() returns from a bundle. */
function stampedBuildInfo() {
  const version = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')).version;
  let gitSha = process.env.SETT_GIT_SHA?.trim() || '';
  if (!gitSha) {
    try {
      gitSha = execFileSync('git', ['rev-parse', 'HEAD'], {
        cwd: root,
        encoding: 'utf8',
        stdio: ['ignore', 'pipe', 'ignore'],
      }).trim();
    } catch {
      gitSha = 'unknown';
    }
  }
  if (!/^([0-9a-f]{7,64}|unknown)$/.test(gitSha))
    throw new Error(`SETT_GIT_SHA is not a git commit: "${gitSha}"`);
  return { version, gitSha };
}

async function bundle() {
  rmSync(dist, { recursive: true, force: true });
  const started = Date.now();
  const common = {
    absWorkingDir: root,
    outExtension: { '.js': '.cjs' },
    bundle: true,
    platform: 'node',
    format: 'cjs',
    target: 'node20',
    sourcemap: 'linked',
    // Stack traces keep the source file's names; the logs show them.
    keepNames: true,
    metafile: true,
    logLevel: 'warning',
    plugins: [externalsPlugin, dirnamePlugin],
    define: { __SETT_BUILD_INFO__: JSON.stringify(stampedBuildInfo()) },
  };
  const result = await esbuild.build({ ...common, entryPoints: ENTRIES, outdir: dist });
  const config = await esbuild.build({
    ...common,
    entryPoints: { 'prisma.config': PRISMA_CONFIG },
    outdir: dist,
    footer: { js: 'module.exports = module.exports.default;' },
  });
  Object.assign(result.metafile.inputs, config.metafile.inputs);
  // Which third-party package each bundle needs, resolved from the file that imports it (pnpm
  // gives each workspace package its own node_modules, so the root alone would miss some).
  const externals = new Map(); // name -> real package dir
  for (const [input, info] of Object.entries(result.metafile.inputs)) {
    for (const imp of info.imports) {
      // Imports erased at compile time (type-only) are listed as external too: skip ours.
      if (!imp.external || !/^[^./<]/.test(imp.path) || /^(node:|@sett\/)/.test(imp.path)) continue;
      const name = packageName(imp.path);
      if (isBuiltin(name)) continue;
      const dir = findPackageDir(name, path.dirname(path.join(root, input)));
      if (!dir) throw new Error(`${input} imports ${imp.path}, which is not installed`);
      const real = realpathSync(dir);
      const seen = externals.get(name);
      if (seen && seen !== real)
        throw new Error(`two installed versions of ${name} are imported: ${seen} and ${real}`);
      externals.set(name, real);
    }
  }
  for (const name of EXTRA_RUNTIME_PACKAGES) {
    const dir = findPackageDir(name, root);
    if (!dir) throw new Error(`${name} is not installed`);
    externals.set(name, realpathSync(dir));
  }
  const sizes = readdirSync(dist)
    .filter((f) => f.endsWith('.cjs'))
    .map((f) => `${f} ${(readFileSync(path.join(dist, f)).length / 1024).toFixed(0)} KiB`);
  console.log(`bundled ${sizes.length} entries in ${Date.now() - started} ms: ${sizes.join(', ')}`);
  return externals;
}

/**
 * Copies what the bundles need at run time into `out`: dist/, prisma/, and node_modules holding
 * the external packages and everything they depend on, taken from node_modules/.pnpm. In pnpm's
 * layout each package sits in `.pnpm/<id>/node_modules/<name>` beside symlinks to its own
 * dependencies, so copying the `.pnpm/<id>` folders reachable from the externals (symlinks kept)
 * gives a self-consistent tree; top-level links make the externals resolvable from dist/.
 */
/**
 * Files left out of the runtime tree: Prisma ships its engines for every database it supports,
 * and Sett uses only PostgreSQL; source maps and type declarations of Prisma are not needed to run.
 * (posthog-js keeps its maps: decide serves them.) node-rdkafka needs only its compiled addon
 * (build/Release/*.node) and lib/: its bundled librdkafka sources (deps/, built against the
 * system's librdkafka instead) and the compiler's object files stay behind.
 */
function pruned(name, file) {
  if (name === 'node-rdkafka')
    return /\/node-rdkafka\/(deps|src|e2e|bench|examples|test|ci)(\/|$)|\/build\/(Release\/obj\.target|deps)(\/|$)|\/build\/Release\/\.deps(\/|$)/.test(
      file,
    );
  if (name !== 'prisma' && name !== '@prisma/client') return false;
  const base = path.basename(file);
  return /\.(mysql|sqlite|sqlserver|cockroachdb)\./.test(base) || /\.(map|d\.ts|d\.mts)$/.test(base);
}

function layOutRuntime(out, externals) {
  const store = realpathSync(path.join(root, 'node_modules', '.pnpm'));
  rmSync(out, { recursive: true, force: true });
  mkdirSync(path.join(out, 'node_modules', '.pnpm'), { recursive: true });
  const idOf = (realDir) => {
    const rel = path.relative(store, realDir);
    if (rel.startsWith('..')) throw new Error(`${realDir} is not in node_modules/.pnpm`);
    return rel.split(path.sep)[0];
  };
  const copied = new Set();
  const queue = [...externals.values()].map(idOf);
  while (queue.length > 0) {
    const id = queue.pop();
    if (copied.has(id)) continue;
    copied.add(id);
    const modules = path.join(store, id, 'node_modules');
    const names = readdirSync(modules).flatMap((entry) =>
      entry.startsWith('@') ? readdirSync(path.join(modules, entry)).map((n) => `${entry}/${n}`) : [entry],
    );
    // The package itself is the one entry that is not a link out of this folder; the others are
    // its dependencies. Optional peers (typescript for Prisma, say) are linked whenever they are
    // installed anywhere, so only what the package's manifest requires is followed.
    const self = names.find((n) =>
      realpathSync(path.join(modules, n)).startsWith(path.join(store, id) + path.sep),
    );
    const manifest = JSON.parse(readFileSync(path.join(modules, self, 'package.json'), 'utf8'));
    const optionalPeer = (n) => manifest.peerDependenciesMeta?.[n]?.optional === true;
    const wanted = new Set([
      ...Object.keys(manifest.dependencies ?? {}),
      ...Object.keys(manifest.optionalDependencies ?? {}),
      ...Object.keys(manifest.peerDependencies ?? {}).filter((n) => !optionalPeer(n)),
    ]);
    mkdirSync(path.join(out, 'node_modules', '.pnpm', id, 'node_modules'), { recursive: true });
    for (const name of names) {
      const from = path.join(modules, name);
      const to = path.join(out, 'node_modules', '.pnpm', id, 'node_modules', name);
      if (name === self) {
        cpSync(from, to, { recursive: true, verbatimSymlinks: true, filter: (src) => !pruned(name, src) });
        continue;
      }
      if (!wanted.has(name) || FILES_ONLY_PACKAGES.has(self)) continue;
      mkdirSync(path.dirname(to), { recursive: true });
      cpSync(from, to, { verbatimSymlinks: true }); // the symlink itself
      const target = realpathSync(from);
      if (target.startsWith(store + path.sep)) queue.push(idOf(target));
    }
  }
  for (const [name, real] of externals) {
    const link = path.join(out, 'node_modules', name);
    mkdirSync(path.dirname(link), { recursive: true });
    const target = path.join(out, 'node_modules', '.pnpm', path.relative(store, real));
    symlinkSync(path.relative(path.dirname(link), target), link);
  }
  cpSync(dist, path.join(out, 'dist'), { recursive: true });
  // The web console's built files, where they are in the workspace (the bundles' __dirname
  // rewriting keeps management's path to them): management serves them at `/`.
  cpSync(path.join(root, 'apps', 'console', 'dist'), path.join(out, 'apps', 'console', 'dist'), {
    recursive: true,
    filter: (src) => !src.includes(`${path.sep}.vite`),
  });
  cpSync(path.join(root, 'prisma'), path.join(out, 'prisma'), { recursive: true });
  cpSync(
    path.join(root, 'deploy', 'docker', 'healthcheck.mjs'),
    path.join(out, 'deploy', 'docker', 'healthcheck.mjs'),
  );
  // A manifest for people and scanners: what is in node_modules. Named `sett` with the
  // workspace's version, like the root package.json, which is where sett_build_info reads it.
  const versions = Object.fromEntries(
    [...externals]
      .sort()
      .map(([name, real]) => [
        name,
        JSON.parse(readFileSync(path.join(real, 'package.json'), 'utf8')).version,
      ]),
  );
  writeFileSync(
    path.join(out, 'package.json'),
    `${JSON.stringify({ name: 'sett', private: true, version: JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')).version, dependencies: versions }, null, 2)}\n`,
  );
  console.log(`runtime tree in ${out}: ${externals.size} direct packages, ${copied.size} in total`);
}

const externals = await bundle();
// A bundle built elsewhere (tests) finds its packages through links beside it, to the very
// versions the workspace resolved for it: walking up to the root node_modules, or pnpm's hoisted
// store, could find another version of a package installed twice (ajv 6 for eslint, 8 for Sett).
if (distFlag !== -1) {
  for (const [name, real] of externals) {
    const link = path.join(dist, 'node_modules', name);
    mkdirSync(path.dirname(link), { recursive: true });
    symlinkSync(real, link);
  }
}
const runtimeFlag = process.argv.indexOf('--runtime');
if (runtimeFlag !== -1) {
  const out = process.argv[runtimeFlag + 1];
  if (!out) throw new Error('--runtime needs a directory');
  // The console (apps/console): Vite's build, which fails above its bundle budget.
  execFileSync(process.execPath, [path.join(root, 'apps', 'console', 'build.mjs')], { stdio: 'inherit' });
  layOutRuntime(path.resolve(out), externals);
}
