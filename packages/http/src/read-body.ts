// Reads a request body with a hard limit on the bytes taken off the wire, the same for every
// service: a body of up to `limitBytes` is read; one above it is refused with 413 as soon as
// Content-Length announces it or the streamed bytes pass the limit, without reading (or
// buffering) the rest. closesConnection says which errors leave the body unread: the caller
// answers with `Connection: close`, or reads and drops the rest for a bounded time and size
// first (lingerOnUnreadBody) so that a client still sending gets the answer.
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

/** How long, and how many bytes of it, an unread body is read and dropped after an early answer. */
export const LINGER_MS = 5_000;
export const LINGER_BYTES = 64 * 1024 * 1024;

/**
 * Around an early answer to a body left unread (413 as soon as Content-Length said so, 415):
 * read and drop the rest of the body, up to LINGER_BYTES or LINGER_MS, as nginx's lingering
 * close does. Closing at once resets the connection of a client still sending (it gets EPIPE,
 * never the answer). A connection the client asked to close is closed by Node as soon as the
 * answer is written, so there the caller waits for this before answering. Resolves true once the
 * body has ended, false when a bound was hit and the connection was destroyed.
 */
export function lingerOnUnreadBody(req: IncomingMessage): Promise<boolean> {
  if (req.complete) return Promise.resolve(true);
  return new Promise<boolean>((resolve) => {
    let dropped = 0;
    const socket = req.socket;
    const finish = (ended: boolean) => {
      clearTimeout(timer);
      req.off('data', onData);
      req.off('end', onEnd);
      socket.off('close', onClose);
      if (!ended) socket.destroy();
      resolve(ended);
    };
    const onData = (chunk: Buffer) => {
      dropped += chunk.length;
      if (dropped > LINGER_BYTES) finish(false);
    };
    const onEnd = () => finish(true);
    const onClose = () => finish(false);
    const timer = setTimeout(() => finish(false), LINGER_MS);
    timer.unref();
    req.on('data', onData);
    req.once('end', onEnd);
    socket.once('close', onClose);
    req.resume();
  });
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
