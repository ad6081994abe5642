// Errors from outside Sett's own code (a body parser, the router's path decoding) as SettErrors,
// so the route mechanism's one error mapping answers them like any other (route-app.ts).
import { PayloadTooLargeError, SettError, ValidationError } from './errors';
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
