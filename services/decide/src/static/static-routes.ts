// GET /static/<file>: the posthog-js bundles (sdk-files.ts) for the HTML snippet and the SDK's
// lazily loaded extensions (`/static/<name>.js?v=<sdk version>`, `/static/<version>/<name>.js`). Only names in the precomputed
// map are served; anything else (`..`, encoded slashes, NUL, unknown names) is a 404 without
// touching the file system. The snippet's script tag uses crossorigin="anonymous", so answers
// carry `Access-Control-Allow-Origin: *` without credentials.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { NotFoundError } from '@sett/http';
import type { SdkFiles } from './sdk-files';

/** A request naming the pinned version (what the SDK sends for its own extensions) never changes. */
export const IMMUTABLE_CACHE = 'public, max-age=31536000, immutable';
/** array.js from the snippet has no version in its URL: a day, then revalidated with the ETag. */
export const UNVERSIONED_CACHE = 'public, max-age=86400';

export interface StaticFiles {
  /** GET /static/<name>: `?v=<pinned version>` makes the answer immutable. */
  unversioned(name: string, v: unknown, req: IncomingMessage, res: ServerResponse): Promise<void>;
  /** GET /static/<version>/<name>: the pinned version or its major, else 404. */
  versioned(version: string, name: string, req: IncomingMessage, res: ServerResponse): Promise<void>;
}

export function createStaticFiles(files: SdkFiles): StaticFiles {
  const send = async (req: IncomingMessage, res: ServerResponse, name: string, immutable: boolean) => {
    const file = !name.includes('..') ? files.get(name) : undefined;
    if (!file) throw new NotFoundError();

    const useGzip = file.gzipped !== undefined && acceptsGzip(req.headers['accept-encoding']);
    const etag = useGzip ? `${file.etag.slice(0, -1)}-gz"` : file.etag;
    res.setHeader('Access-Control-Allow-Origin', '*');
    res.removeHeader('Access-Control-Allow-Credentials');
    res.setHeader('Vary', 'Accept-Encoding');
    res.setHeader('Cross-Origin-Resource-Policy', 'cross-origin');
    res.setHeader('X-Content-Type-Options', 'nosniff');
    res.setHeader('Cache-Control', immutable ? IMMUTABLE_CACHE : UNVERSIONED_CACHE);
    res.setHeader('ETag', etag);
    if (matchesEtag(req.headers['if-none-match'], [file.etag, etag])) {
      res.statusCode = 304;
      res.end();
      return;
    }
    const body = useGzip ? await file.gzipped!() : await file.body();
    res.setHeader('Content-Type', file.contentType);
    if (useGzip) res.setHeader('Content-Encoding', 'gzip');
    res.setHeader('Content-Length', String(body.length));
    res.statusCode = 200;
    res.end(body);
  };
  // posthog-js >= 1.4xx asks for its extensions at /static/<its version>/<name>.js first
  // (strict_script_versioning), and PostHog documents /static/<major>/array.js for pinning the
  // snippet. Only the pinned version and its major are served; another version is a 404, after
  // which the SDK falls back to the unversioned path.
  const major = files.version.split('.')[0];
  return {
    unversioned: (name, v, req, res) => send(req, res, name, v === files.version),
    versioned: async (version, name, req, res) => {
      if (version !== files.version && version !== major) throw new NotFoundError();
      await send(req, res, name, version === files.version);
    },
  };
}

/** `gzip` listed with a non-zero quality (or `*`). */
export function acceptsGzip(header: string | undefined): boolean {
  if (!header) return false;
  for (const part of header.split(',')) {
    const [coding, ...params] = part.split(';').map((s) => s.trim().toLowerCase());
    if (coding !== 'gzip' && coding !== '*') continue;
    const q = params.find((p) => p.startsWith('q='));
    if (q === undefined || Number(q.slice(2)) > 0) return true;
  }
  return false;
}

/** If-None-Match uses the weak comparison: `W/` is ignored; `*` matches any current file. */
export function matchesEtag(header: string | undefined, etags: string[]): boolean {
  if (!header) return false;
  if (header.trim() === '*') return true;
  return header
    .split(',')
    .map((tag) => tag.trim().replace(/^W\//, ''))
    .some((tag) => etags.includes(tag));
}
