// Reads a request body with a hard limit on the bytes taken off the wire, the same for every
// service: a body of up to `limitBytes` is read; one above it is refused with 413 as soon as
// Content-Length announces it or the streamed bytes pass the limit, without reading (or
// buffering) the rest. The error asks for `Connection: close` (see closesConnection) so that
// Node does not drain the unread remainder for keep-alive.
import type { IncomingMessage } from 'node:http';
import { PayloadTooLargeError, ValidationError } from './errors';

export class BodyTooLargeError extends PayloadTooLargeError {
  constructor(limit: number) {
    super(`Request body must be at most ${limit} bytes.`);
  }
}

/** Whether the answer to this error must close the connection (the body was left unread). */
export function closesConnection(error: unknown): boolean {
  return error instanceof BodyTooLargeError;
}

export function readBody(req: IncomingMessage, limitBytes: number): Promise<Buffer> {
  const declared = req.headers['content-length'];
  if (declared !== undefined && Number(declared) > limitBytes)
    return Promise.reject(new BodyTooLargeError(limitBytes));

  return new Promise<Buffer>((resolve, reject) => {
    const chunks: Buffer[] = [];
    let received = 0;
    let done = false;
    const cleanup = () => {
      done = true;
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onError);
      req.off('aborted', onAborted);
    };
    const onData = (chunk: Buffer) => {
      received += chunk.length;
      if (received > limitBytes) {
        cleanup();
        chunks.length = 0;
        req.pause();
        reject(new BodyTooLargeError(limitBytes));
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = () => {
      if (done) return;
      cleanup();
      resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, received));
    };
    const onError = (error: Error) => {
      if (done) return;
      cleanup();
      reject(
        new ValidationError(`Could not read the request body: ${error.message}`, null, 'invalid_payload'),
      );
    };
    const onAborted = () => onError(new Error('request aborted'));
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onError);
    req.on('aborted', onAborted);
  });
}
