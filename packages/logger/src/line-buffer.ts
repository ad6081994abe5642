// Log lines to a file descriptor (stdout), written together once per turn of the event loop.
// Node writes to a pipe synchronously on Linux, one system call per line: with an access line per
// request that was a quarter of management's time on small reads, and a slow reader of the pipe
// (the container runtime) stalled the service on every line. Lines are kept in order; a turn's
// lines go out in one write, at once past MAX_PENDING_BYTES; and whatever is pending when the
// process exits (a crash logged just before process.exit) is written synchronously on 'exit'.
import fs from 'node:fs';
import { Writable } from 'node:stream';

const MAX_PENDING_BYTES = 256 * 1024;

export interface LineBufferOptions {
  /** Where the lines go (default 1, stdout). */
  fd?: number;
  /** How a batch is written (default: process.stdout for fd 1, else fs.writeSync). */
  write?: (text: string) => void;
}

export function createLineBuffer(options: LineBufferOptions = {}): Writable {
  const fd = options.fd ?? 1;
  const out =
    options.write ??
    (fd === 1
      ? (text: string) => void process.stdout.write(text)
      : (text: string) => void fs.writeSync(fd, text));
  let pending: string[] = [];
  let pendingBytes = 0;
  let scheduled = false;

  const flush = (): void => {
    scheduled = false;
    if (pending.length === 0) return;
    const text = pending.join('');
    pending = [];
    pendingBytes = 0;
    out(text);
  };
  // Synchronous: at exit there is no later turn for an asynchronous write to finish in.
  const flushAtExit = (): void => {
    if (pending.length === 0) return;
    const text = pending.join('');
    pending = [];
    pendingBytes = 0;
    try {
      fs.writeSync(fd, text);
    } catch {
      // Nowhere left to report it.
    }
  };
  process.once('exit', flushAtExit);

  return new Writable({
    decodeStrings: false,
    write(chunk: string | Buffer, _encoding, callback) {
      const line = typeof chunk === 'string' ? chunk : chunk.toString('utf8');
      pending.push(line);
      pendingBytes += line.length;
      if (pendingBytes >= MAX_PENDING_BYTES) flush();
      else if (!scheduled) {
        scheduled = true;
        setImmediate(flush);
      }
      callback();
    },
    final(callback) {
      flush();
      process.off('exit', flushAtExit);
      callback();
    },
  });
}
