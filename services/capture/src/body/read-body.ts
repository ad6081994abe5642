// Reads a request body ourselves, with a hard limit on the bytes taken off the wire: a body at
// or over the limit is refused as soon as Content-Length says so, or as soon as the streamed
// bytes reach it, without reading (or buffering) the rest. The caller sets `Connection: close`
// on such answers so Node does not drain the unread remainder for keep-alive.
import type { IncomingMessage } from 'node:http';
import { PayloadTooLargeError, ValidationError } from '@sett/http';

export class BodyTooLargeError extends PayloadTooLargeError {
  constructor(limit: number) {
    super(`Request body must be smaller than ${limit} bytes.`);
  }
}

export function readRawBody(req: IncomingMessage, limitBytes: number): Promise<Buffer> {
  const declared = req.headers['content-length'];
  if (declared !== undefined && Number(declared) >= limitBytes)
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
      if (received >= limitBytes) {
        cleanup();
        chunks.length = 0;
        // Stop reading: the socket is closed after the 413 is written.
        req.pause();
        reject(new BodyTooLargeError(limitBytes));
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = () => {
      if (done) return;
      cleanup();
      resolve(chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks, received));
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
