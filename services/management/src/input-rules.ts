// The one rule for what management accepts, applied to every request of its route table right
// after authentication (so 401 still comes first; the route mechanism's `checkInput`): the URL path must be valid percent-encoded UTF-8,
// and no path segment, query parameter (name or value), JSON body key or string may hold
// U+0000 or a lone UTF-16 surrogate (Postgres can store neither in text or jsonb), and the body
// may nest at most MAX_JSON_DEPTH containers. Anything else is a 400 `validation_error` whose
// attr names the field (`path` for a path segment), before any handler or query sees it. Body
// keys named `__proto__` are dropped: Prisma does not store them, so no answer may show them.
import type { FastifyRequest } from 'fastify';
import { ValidationError } from '@sett/http';
import {
  MAX_JSON_DEPTH,
  dropProtoKeys,
  findJsonProblem,
  unstorableReason,
  type JsonProblem,
} from '@sett/schemas';

function problemError(reason: JsonProblem['reason'], attr: string | null, where: string): ValidationError {
  switch (reason) {
    case 'nul':
      return new ValidationError(
        `${where}: null characters (U+0000) are not allowed.`,
        attr,
        'null_characters_not_allowed',
      );
    case 'lone_surrogate':
      return new ValidationError(
        `${where}: unpaired surrogate characters (U+D800-U+DFFF) are not allowed.`,
        attr,
        'surrogate_characters_not_allowed',
      );
    case 'too_deep':
      return new ValidationError(
        `${where} is nested deeper than ${MAX_JSON_DEPTH} levels.`,
        attr,
        'too_deep',
      );
  }
}

/** Throws a 400 when a segment of the (still encoded) path is malformed or unstorable. */
export function checkPath(encodedPath: string): void {
  for (const segment of encodedPath.split('/')) {
    let decoded = segment;
    if (segment.includes('%')) {
      try {
        decoded = decodeURIComponent(segment);
      } catch {
        throw new ValidationError(
          'The URL path is not valid percent-encoding of UTF-8.',
          'path',
          'invalid_path',
        );
      }
    }
    const reason = unstorableReason(decoded);
    if (reason) throw problemError(reason, 'path', 'URL path segment');
  }
}

/** Throws a 400 naming the first query parameter or body field Sett will not store. */
export function checkQueryAndBody(query: unknown, body: unknown): void {
  const inQuery = findJsonProblem(query, '', MAX_JSON_DEPTH);
  if (inQuery) throw problemError(inQuery.reason, inQuery.path || null, `Query parameter ${inQuery.path}`);
  const inBody = findJsonProblem(body, '', MAX_JSON_DEPTH);
  if (inBody) {
    const attr = inBody.path || null;
    throw problemError(inBody.reason, attr, attr ?? 'The request body');
  }
}

/** The route mechanism's checkInput: the path, then the query and the parsed body. */
export function checkInput(request: FastifyRequest): void {
  checkPath(request.url.split('?')[0] ?? '');
  checkQueryAndBody(request.query, request.body);
  // Storage leaves `__proto__` keys out (Prisma), so they are dropped before anything echoes them.
  dropProtoKeys(request.body);
}
