// The console's built files (apps/console/dist, or `console/` beside the bundles in the image),
// read once into memory with a gzipped copy each: index.html, and the hashed assets Vite names
// after their content. Only names found there are served; a request never reaches the file
// system with a name it chose.
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import { createHash } from 'node:crypto';

export interface ConsoleFile {
  body: Buffer;
  gzipped: Buffer;
  contentType: string;
  etag: string;
}

export interface ConsoleFiles {
  /** Where the files were read from, or null when the console is not built. */
  dir: string | null;
  index: ConsoleFile | null;
  asset(name: string): ConsoleFile | undefined;
}

const TYPES: Record<string, string> = {
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.html': 'text/html; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.woff2': 'font/woff2',
  '.json': 'application/json',
};

function load(file: string): ConsoleFile {
  const body = fs.readFileSync(file);
  return {
    body,
    gzipped: zlib.gzipSync(body, { level: 9 }),
    contentType: TYPES[path.extname(file)] ?? 'application/octet-stream',
    etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"`,
  };
}

/** The first of `candidates` holding an index.html. */
export function findConsoleDir(candidates: string[]): string | null {
  for (const dir of candidates) if (fs.existsSync(path.join(dir, 'index.html'))) return dir;
  return null;
}

export function loadConsoleFiles(dir: string | null): ConsoleFiles {
  if (!dir) return { dir: null, index: null, asset: () => undefined };
  const assets = new Map<string, ConsoleFile>();
  const assetDir = path.join(dir, 'assets');
  if (fs.existsSync(assetDir))
    for (const name of fs.readdirSync(assetDir))
      if (fs.statSync(path.join(assetDir, name)).isFile()) assets.set(name, load(path.join(assetDir, name)));
  return { dir, index: load(path.join(dir, 'index.html')), asset: (name) => assets.get(name) };
}
