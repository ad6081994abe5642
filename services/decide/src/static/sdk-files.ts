// The posthog-js browser bundles Sett serves under /static/ (array.js for the HTML snippet and
// every bundle the SDK loads lazily: recorders, surveys, web vitals, exception autocapture...),
// taken from the posthog-js version pinned in decide's package.json. The dist directory is read
// once at start into a map keyed by file name; requests can only pick a name from that map, so
// no request path ever reaches the file system. Bundles (~9 MB) are kept in memory; source maps
// (~12 MB, rarely fetched) stay on disk and are read when asked for.
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { gzip as gzipCallback } from 'node:zlib';

const gzip = promisify(gzipCallback);

/** File names a request may ask for: lower-case bundle names, `.js` or `.js.map`. */
export const SDK_FILE_NAME = /^[a-z0-9][a-z0-9-]*(?:\.[a-z0-9-]+)*\.js(?:\.map)?$/;

export interface SdkFile {
  name: string;
  contentType: string;
  /** Strong ETag of the identity encoding, quoted. */
  etag: string;
  size: number;
  /** The bytes: from memory for bundles, from disk for source maps. */
  body(): Promise<Buffer>;
  /** gzip of the bundle, computed on first use and kept; undefined for source maps. */
  gzipped?: () => Promise<Buffer>;
}

export interface SdkFiles {
  /** The posthog-js version the files come from. */
  version: string;
  get(name: string): SdkFile | undefined;
  names(): string[];
}

/** posthog-js's dist directory as installed for decide. */
export function posthogJsDistDir(): string {
  return path.join(path.dirname(require.resolve('posthog-js/package.json')), 'dist');
}

export function loadSdkFiles(distDir: string = posthogJsDistDir()): SdkFiles {
  const pkg = JSON.parse(readFileSync(path.join(distDir, '..', 'package.json'), 'utf8')) as {
    version?: unknown;
  };
  const version = typeof pkg.version === 'string' ? pkg.version : 'unknown';
  const files = new Map<string, SdkFile>();
  for (const entry of readdirSync(distDir, { withFileTypes: true })) {
    if (!entry.isFile() || !SDK_FILE_NAME.test(entry.name)) continue;
    const full = path.join(distDir, entry.name);
    files.set(
      entry.name,
      entry.name.endsWith('.map') ? onDisk(entry.name, full) : inMemory(entry.name, full),
    );
  }
  return {
    version,
    get: (name) => (SDK_FILE_NAME.test(name) ? files.get(name) : undefined),
    names: () => [...files.keys()].sort(),
  };
}

function inMemory(name: string, full: string): SdkFile {
  const bytes = readFileSync(full);
  let compressed: Promise<Buffer> | undefined;
  return {
    name,
    contentType: 'application/javascript; charset=utf-8',
    etag: `"${createHash('sha256').update(bytes).digest('base64url').slice(0, 32)}"`,
    size: bytes.length,
    body: async () => bytes,
    gzipped: () => {
      compressed ??= gzip(bytes, { level: 9 }).catch((err: unknown) => {
        compressed = undefined;
        throw err;
      });
      return compressed;
    },
  };
}

function onDisk(name: string, full: string): SdkFile {
  const stat = statSync(full);
  return {
    name,
    contentType: 'application/json; charset=utf-8',
    // The package is immutable once installed: size and modification time identify the bytes.
    etag: `"${stat.size.toString(16)}-${Math.floor(stat.mtimeMs).toString(16)}"`,
    size: stat.size,
    body: () => readFile(full),
  };
}
