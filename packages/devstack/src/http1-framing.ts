// Just enough HTTP/1.1 parsing for the local edge to forward messages as bytes: where a head
// ends, the few header fields that decide framing and routing, and where a chunked body ends.
// Everything else (header values, bodies) is passed on untouched and parsed by the service.
// Strict where framing depends on it: a request whose length the edge and the service could
// read differently (both Content-Length and Transfer-Encoding, a repeated or malformed length,
// a folded or malformed header line) is refused instead of forwarded.

const CRLF = 0x0a;
const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

export class FramingError extends Error {
  constructor(
    readonly status: 400 | 431 | 501,
    message: string,
  ) {
    super(message);
  }
}

export interface Head {
  /** The start line: request line or status line. */
  startLine: string;
  /** Header lines as received (without CRLF). */
  lines: string[];
  /** The lower-cased field name of each line, in the same order. */
  names: string[];
  /** Lower-cased name -> value, for the fields the edge reads (the last one wins). */
  fields: Map<string, string>;
  /** Content-Length, or null when absent. */
  contentLength: number | null;
  chunked: boolean;
  /** Bytes of the head including the empty line. */
  size: number;
}

/** Fields whose value the edge needs; others are only carried. */
const READ = new Set([
  'content-length',
  'transfer-encoding',
  'connection',
  'expect',
  'host',
  'x-forwarded-for',
  'x-request-id',
]);

/** Parses a head if `buf` holds a complete one; null when more bytes are needed. */
export function parseHead(buf: Buffer, maxBytes: number): Head | null {
  const end = buf.indexOf('\r\n\r\n', 0, 'latin1');
  if (end < 0) {
    if (buf.length > maxBytes) throw new FramingError(431, 'Request header fields too large.');
    return null;
  }
  if (end > maxBytes) throw new FramingError(431, 'Request header fields too large.');
  const text = buf.toString('latin1', 0, end);
  const all = text.split('\r\n');
  const startLine = all[0]!;
  const lines = all.slice(1);
  const names: string[] = [];
  const fields = new Map<string, string>();
  let contentLength: number | null = null;
  let transferEncoding: string | null = null;
  for (const line of lines) {
    const colon = line.indexOf(':');
    const name = colon > 0 ? line.slice(0, colon) : '';
    if (!TOKEN.test(name)) throw new FramingError(400, 'Malformed header line.');
    const lower = name.toLowerCase();
    names.push(lower);
    if (!READ.has(lower)) continue;
    const value = line.slice(colon + 1).trim();
    if (lower === 'content-length') {
      if (!/^\d{1,15}$/.test(value) || contentLength !== null)
        throw new FramingError(400, 'Invalid Content-Length.');
      contentLength = Number(value);
    } else if (lower === 'transfer-encoding') {
      if (transferEncoding !== null) throw new FramingError(400, 'Repeated Transfer-Encoding.');
      transferEncoding = value.toLowerCase();
    }
    fields.set(lower, value);
  }
  if (transferEncoding !== null) {
    if (contentLength !== null)
      throw new FramingError(400, 'Both Content-Length and Transfer-Encoding were sent.');
    if (transferEncoding !== 'chunked') throw new FramingError(501, 'Unsupported Transfer-Encoding.');
  }
  return {
    startLine,
    lines,
    names,
    fields,
    contentLength,
    chunked: transferEncoding === 'chunked',
    size: end + 4,
  };
}

const enum Chunk {
  Size,
  SizeLineEnd,
  Data,
  DataEnd,
  Trailer,
  Done,
}

/**
 * Follows a chunked body across buffers: `scan` says how many bytes of `buf` (from `start`)
 * still belong to the body, and `done` turns true after the last chunk's trailer section.
 */
export class ChunkedScanner {
  private state = Chunk.Size;
  private size = 0;
  private sizeDigits = 0;
  private remaining = 0;
  private lineLength = 0;

  get done(): boolean {
    return this.state === Chunk.Done;
  }

  scan(buf: Buffer, start: number): number {
    let i = start;
    while (i < buf.length && this.state !== Chunk.Done) {
      switch (this.state) {
        case Chunk.Size: {
          const c = buf[i]!;
          const digit = hexValue(c);
          if (digit >= 0 && this.sizeDigits >= 0) {
            if (++this.sizeDigits > 12) throw new FramingError(400, 'Chunk too large.');
            this.size = this.size * 16 + digit;
          } else if (c === 0x0d) {
            if (this.sizeDigits === 0) throw new FramingError(400, 'Malformed chunk size.');
            this.state = Chunk.SizeLineEnd;
          } else if (c === 0x3b || this.sizeDigits < 0) {
            // a chunk extension: skipped up to the end of the line
            if (this.sizeDigits === 0) throw new FramingError(400, 'Malformed chunk size.');
            if (this.sizeDigits > 0) this.sizeDigits = -this.sizeDigits;
          } else throw new FramingError(400, 'Malformed chunk size.');
          i++;
          break;
        }
        case Chunk.SizeLineEnd:
          if (buf[i] !== CRLF) throw new FramingError(400, 'Malformed chunk size line.');
          i++;
          if (this.size === 0) {
            this.state = Chunk.Trailer;
            this.lineLength = 0;
          } else {
            this.remaining = this.size;
            this.state = Chunk.Data;
          }
          this.size = 0;
          this.sizeDigits = 0;
          break;
        case Chunk.Data: {
          const take = Math.min(this.remaining, buf.length - i);
          i += take;
          this.remaining -= take;
          if (this.remaining === 0) {
            this.state = Chunk.DataEnd;
            this.lineLength = 0;
          }
          break;
        }
        case Chunk.DataEnd:
          // exactly CRLF after the data
          if (this.lineLength === 0 ? buf[i] !== 0x0d : buf[i] !== CRLF)
            throw new FramingError(400, 'Malformed chunk.');
          i++;
          if (++this.lineLength === 2) this.state = Chunk.Size;
          break;
        case Chunk.Trailer: {
          // trailer lines until an empty one
          const c = buf[i]!;
          i++;
          if (c === CRLF) {
            if (this.lineLength <= 1) this.state = Chunk.Done;
            this.lineLength = 0;
          } else if (++this.lineLength > 8192) throw new FramingError(431, 'Trailer too large.');
          break;
        }
      }
    }
    return i - start;
  }
}

function hexValue(c: number): number {
  if (c >= 0x30 && c <= 0x39) return c - 0x30;
  if (c >= 0x61 && c <= 0x66) return c - 0x57;
  if (c >= 0x41 && c <= 0x46) return c - 0x37;
  return -1;
}
