// Request ids: the caller's `X-Request-Id` when it is a plausible id (at most 128 characters of
// letters, digits and `-_.:/+=@`), else a fresh UUID. The id is echoed on the response and every
// log line written while the request is served carries it (@sett/logger's request context).
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { currentRequestId, runWithRequestId } from '@sett/logger';

export const REQUEST_ID_HEADER = 'X-Request-Id';
const MAX_REQUEST_ID_LENGTH = 128;
const SAFE_REQUEST_ID = /^[A-Za-z0-9\-_.:/+=@]+$/;

/** The caller's id if it is safe to log and echo, else a new one. */
export function requestIdOf(req: Pick<IncomingMessage, 'headers'>): string {
  const given = req.headers['x-request-id'];
  if (
    typeof given === 'string' &&
    given.length > 0 &&
    given.length <= MAX_REQUEST_ID_LENGTH &&
    SAFE_REQUEST_ID.test(given)
  )
    return given;
  return randomUUID();
}

/**
 * Sets the response header and runs `serve` inside the request's logging context. A response
 * that already has an id (an outer layer of the same service gave it one) keeps it, so nested
 * layers agree.
 */
export function withRequestId<T>(
  req: IncomingMessage,
  res: ServerResponse,
  serve: (requestId: string) => T,
): T {
  const given = res.getHeader(REQUEST_ID_HEADER);
  let id: string;
  if (typeof given === 'string') {
    id = given;
    if (currentRequestId() === id) return serve(id);
  } else {
    id = requestIdOf(req);
    res.setHeader(REQUEST_ID_HEADER, id);
  }
  return runWithRequestId(id, () => serve(id));
}
