// The version and git commit of the running code, for sett_build_info, /_health and
// `sett --version`. scripts/build.mjs stamps both into the bundles it compiles (the version of
// the workspace package.json, the commit from SETT_GIT_SHA or `git rev-parse HEAD`), because an
// image's build context has no .git and its runtime no sources. Run from the sources (tsx, jest),
// they are read here instead: the package.json named "sett" above this file, and git, when it is
// installed and this is a checkout; "unknown" otherwise.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

export type BuildInfo = { version: string; gitSha: string };

// Replaced by the bundler (esbuild `define`); never defined when running from the sources.
declare const __SETT_BUILD_INFO__: BuildInfo | undefined;

let cached: BuildInfo | undefined;

export function buildInfo(): BuildInfo {
  if (cached) return cached;
  cached =
    typeof __SETT_BUILD_INFO__ !== 'undefined' && __SETT_BUILD_INFO__
      ? { ...__SETT_BUILD_INFO__ }
      : fromSources(__dirname);
  return cached;
}

function fromSources(start: string): BuildInfo {
  for (let dir = start; ; dir = path.dirname(dir)) {
    try {
      const pkg = JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8')) as {
        name?: unknown;
        version?: unknown;
      };
      if (pkg.name === 'sett' && typeof pkg.version === 'string')
        return { version: pkg.version, gitSha: gitHead(dir) };
    } catch {
      // no package.json here (or unreadable): keep walking up
    }
    if (path.dirname(dir) === dir) return { version: 'unknown', gitSha: 'unknown' };
  }
}

/** `git rev-parse HEAD` in dir, or "unknown" (no git, not a checkout). Once per process. */
export function gitHead(dir: string): string {
  try {
    const sha = execFileSync('git', ['rev-parse', 'HEAD'], {
      cwd: dir,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
      timeout: 5000,
    }).trim();
    return /^[0-9a-f]{7,64}$/.test(sha) ? sha : 'unknown';
  } catch {
    return 'unknown';
  }
}
