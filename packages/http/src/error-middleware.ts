// The one place errors become HTTP responses. Known errors keep their status and body; body
// parser failures become 400/413; anything else is a 500 with an error id that is logged
// together with the error object (4xx are not logged above debug).
import { randomUUID } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import type { ErrorRequestHandler, RequestHandler } from 'express';
import type { Logger } from '@sett/logger';
import { NotFoundError, PayloadTooLargeError, SettError, ValidationError, type ErrorBody } from './errors';
import { BodyTooLargeError } from './read-body';

interface BodyParserError extends Error {
  type?: string;
  limit?: unknown;
  status?: number;
  expose?: boolean;
}

export function toSettError(err: unknown): SettError | undefined {
  if (err instanceof SettError) return err;
  // The router decodes path parameters with decodeURIComponent: `%E0%A4%A` throws here.
  if (err instanceof URIError)
    return new ValidationError('The path has malformed percent-encoding.', 'path', 'invalid_path');
  const e = err as BodyParserError;
  if (e && typeof e === 'object') {
    // Worded as @sett/http's own body reader words it, so both readers answer alike.
    if (e.type === 'entity.too.large' && typeof e.limit === 'number') return new BodyTooLargeError(e.limit);
    if (e.type === 'entity.too.large' || e.status === 413) return new PayloadTooLargeError();
    if (e.type === 'entity.parse.failed')
      return new ValidationError('Malformed request body: not valid JSON.', null, 'invalid_payload');
    if (e.type === 'encoding.unsupported' || e.type === 'charset.unsupported') {
      return new ValidationError(e.message, null, 'unsupported_encoding');
    }
    if (e.type === 'request.aborted')
      return new ValidationError('Request aborted by the client.', null, 'aborted');
    if (typeof e.status === 'number' && e.status >= 400 && e.status < 500 && e.expose) {
      return new ValidationError(e.message, null, 'invalid_request');
    }
  }
  return undefined;
}

export function errorMiddleware(logger: Logger): ErrorRequestHandler {
  return (err, req, res, next) => {
    if (res.headersSent) {
      next(err);
      return;
    }
    const known = toSettError(err);
    if (known) {
      logger.debug('request rejected', {
        method: req.method,
        path: req.path,
        status: known.status,
        code: known.code,
      });
      res.status(known.status).set(known.headers).json(known.toJSON());
      return;
    }
    const errorId = randomUUID();
    logger.error('unhandled error', { error_id: errorId, method: req.method, path: req.path, err });
    const body: ErrorBody = {
      type: 'server_error',
      code: 'error',
      detail: 'A server error occurred.',
      attr: null,
      error_id: errorId,
    };
    res.status(500).json(body);
  };
}

export const notFoundHandler: RequestHandler = (_req, _res, next) => next(new NotFoundError());

/**
 * The error middleware's answer for handlers that run outside Express (plain node:http hot
 * paths): the same status, headers, body and logging for a given error.
 */
export function sendError(
  res: ServerResponse,
  err: unknown,
  logger: Logger,
  req: { method?: string; url?: string } = {},
): void {
  const path = (req.url ?? '').split('?')[0];
  if (res.headersSent) {
    logger.error('error after the response started', { method: req.method, path, err });
    res.destroy();
    return;
  }
  const known = toSettError(err);
  let status: number;
  let body: ErrorBody;
  if (known) {
    logger.debug('request rejected', { method: req.method, path, status: known.status, code: known.code });
    for (const [name, value] of Object.entries(known.headers)) res.setHeader(name, value);
    status = known.status;
    body = known.toJSON();
  } else {
    const errorId = randomUUID();
    logger.error('unhandled error', { error_id: errorId, method: req.method, path, err });
    status = 500;
    body = {
      type: 'server_error',
      code: 'error',
      detail: 'A server error occurred.',
      attr: null,
      error_id: errorId,
    };
  }
  const json = JSON.stringify(body);
  res.statusCode = status;
  res.setHeader('Content-Type', 'application/json; charset=utf-8');
  res.setHeader('Content-Length', Buffer.byteLength(json));
  res.end(json);
}
