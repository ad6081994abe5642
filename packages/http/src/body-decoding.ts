// Turns the raw bytes of a public request (capture, decide) into a JSON value, the way PostHog's
// SDKs send them: plain JSON (application/json or text/plain), gzip (Content-Encoding: gzip,
// ?compression=gzip-js, or gzip magic bytes), lz-string base64 (`compression=lz64`, usually as a
// `data=` form field), plain base64 (`data=` form fields, or a bare base64 body), and JSON sent
// as a form (curl -d). Every decoding step is capped while it runs, not after: gzip through
// zlib's maxOutputLength (inflation stops at the first chunk past the cap, off the event loop),
// lz64 through our own decoder that counts its output (lz64.ts), base64 by its decoded size
// before decoding. A bomb therefore costs at most the cap in memory and time linear in the cap.
//
// Many bombs at once are bounded by the process' decompression budget (decompression-budget.ts),
// when the caller passes one: a gzip body's size is known before inflating (its trailer states
// it, and zlib refuses a body that does not match), a base64 body's from its length, and an lz64
// body is decoded (synchronously, one at a time) no further than the budget has room for. The
// size is reserved before the bytes exist, and held until the response closes (`heldUntil`) or
// decoding ends; a body that does not fit is 503 `unavailable_error` with Retry-After, before
// it is inflated. Plain bodies are not counted: their size is what the client sent.
import { gunzip } from 'node:zlib';
import { promisify } from 'node:util';
import type { DecompressionBudget } from './decompression-budget';
import { PayloadTooLargeError, ServiceUnavailableError, ValidationError } from './errors';
import { decompressLz64 } from './lz64';

const gunzipAsync = promisify(gunzip) as (buf: Buffer, opts: { maxOutputLength: number }) => Promise<Buffer>;

export type EncodedBody = {
  raw: Buffer;
  contentType: string | undefined;
  contentEncoding: string | undefined;
  /** `compression` query parameter, if any. */
  compression: string | undefined;
};

export type DecodeLimits = {
  /** Largest decompressed body accepted (wire limit x inflate ratio). */
  maxInflatedBytes: number;
  /** The process' decompression budget (DECOMPRESSION_BUDGET_BYTES); none: not counted. */
  budget?: DecompressionBudget;
  /** Hold the reservation until this response closes (the parsed body lives that long); none:
   * until decodeBody returns. A node:http ServerResponse (Fastify's reply.raw) will do. */
  heldUntil?: { readonly closed: boolean; once(event: 'close', listener: () => void): unknown };
};

/** Seconds a client is asked to wait when the budget is spent: bodies in flight finish fast. */
const BUDGET_RETRY_AFTER_SECONDS = 1;

const invalid = (detail: string) => new ValidationError(detail, null, 'invalid_payload');
const tooLarge = (limits: DecodeLimits) =>
  new PayloadTooLargeError(
    `Decompressed request body must be smaller than ${limits.maxInflatedBytes} bytes.`,
  );

const overBudget = () =>
  new ServiceUnavailableError(
    'Too many compressed request bodies are being decompressed at once, retry later.',
    BUDGET_RETRY_AFTER_SECONDS,
  );

/** The reservations one request holds; all released together. */
class Reservations {
  private releases: Array<() => void> = [];
  constructor(private readonly budget: DecompressionBudget | undefined) {}

  /** Reserves `bytes` of decompressed body, or throws the 503. */
  take(bytes: number): void {
    if (!this.budget) return;
    const release = this.budget.reserve(bytes);
    if (!release) throw overBudget();
    this.releases.push(release);
  }

  /** How far a decoder may go: the cap, or less when the budget has less room. */
  room(cap: number): number {
    return this.budget ? Math.min(cap, this.budget.room()) : cap;
  }

  releaseAll(): void {
    for (const release of this.releases.splice(0)) release();
  }
}

function isGzip(buf: Buffer): boolean {
  return buf.length >= 2 && buf[0] === 0x1f && buf[1] === 0x8b;
}

/** The smallest gzip member: a 10-byte header, an empty deflate block, an 8-byte trailer. */
const GZIP_MIN_BYTES = 18;

async function inflate(buf: Buffer, limits: DecodeLimits, held: Reservations): Promise<Buffer> {
  // The trailer's ISIZE states the decompressed size (mod 2^32). zlib checks it at the end, so a
  // body that states too little fails there, or at the stated size, which is the most we let it
  // produce: either way it gets no more memory than it said it needs.
  // (Without the magic bytes zlib refuses the header at once, producing nothing.)
  let stated = limits.maxInflatedBytes;
  if (isGzip(buf) && buf.length >= GZIP_MIN_BYTES) {
    stated = buf.readUInt32LE(buf.length - 4);
    if (stated > limits.maxInflatedBytes) throw tooLarge(limits);
    held.take(stated);
  }
  try {
    // zlib stops inflating (and frees what it has) at the first output chunk past the limit.
    return await gunzipAsync(buf, { maxOutputLength: Math.max(stated, 1) });
  } catch (error) {
    const e = error as NodeJS.ErrnoException;
    if (e.code === 'ERR_BUFFER_TOO_LARGE' || e instanceof RangeError) {
      if (stated === limits.maxInflatedBytes) throw tooLarge(limits);
      throw invalid('Could not decompress the gzip request body: it is longer than its trailer says.');
    }
    throw invalid(`Could not decompress the gzip request body: ${e.message}`);
  }
}

function decodeLz64(data: string, limits: DecodeLimits, held: Reservations): string {
  // Synchronous, so no other body decodes meanwhile: decode no further than the budget has room
  // for, then reserve what came out.
  const room = held.room(limits.maxInflatedBytes);
  const result = decompressLz64(data, room);
  if (result.kind === 'too_large') throw room < limits.maxInflatedBytes ? overBudget() : tooLarge(limits);
  if (result.kind === 'invalid' || result.text === '')
    throw invalid('Could not decompress the lz64 request body.');
  held.take(Buffer.byteLength(result.text));
  return result.text;
}

const BASE64 = /^[A-Za-z0-9+/=_-]*$/;

function decodeBase64(data: string, limits: DecodeLimits, held: Reservations): string {
  const trimmed = data.trim();
  // Some SDKs post `data=<json>` without encoding it.
  if (trimmed.startsWith('{') || trimmed.startsWith('[')) return trimmed;
  // Four characters make at most three bytes: refuse before decoding anything.
  const decodedBytes = Math.floor((trimmed.length * 3) / 4);
  if (decodedBytes > limits.maxInflatedBytes) throw tooLarge(limits);
  if (!BASE64.test(trimmed)) throw invalid('The data field is neither JSON nor base64.');
  held.take(decodedBytes);
  return Buffer.from(trimmed, 'base64').toString('utf8');
}

function looksLikeJson(text: string): boolean {
  const first = text.trimStart()[0];
  return first === '{' || first === '[';
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch (error) {
    throw invalid(`Malformed request body: not valid JSON (${(error as Error).message}).`);
  }
}

/** The decoded JSON value of a request body. Throws 400 / 413 / 503 SettErrors. */
export async function decodeBody(body: EncodedBody, limits: DecodeLimits): Promise<unknown> {
  const held = new Reservations(limits.budget);
  let value: unknown;
  try {
    value = await decode(body, limits, held);
  } catch (error) {
    held.releaseAll();
    throw error;
  }
  const until = limits.heldUntil;
  if (!until || until.closed) held.releaseAll();
  else until.once('close', () => held.releaseAll());
  return value;
}

async function decode(body: EncodedBody, limits: DecodeLimits, held: Reservations): Promise<unknown> {
  let buf = body.raw;
  if (buf.length === 0)
    throw invalid(
      'No data found. Make sure to use a POST request when sending the payload in the body of the request.',
    );

  const encoding = body.contentEncoding?.trim().toLowerCase();
  let compression = body.compression?.trim().toLowerCase();
  if (encoding && encoding !== 'identity' && encoding !== 'gzip' && encoding !== 'x-gzip') {
    throw new ValidationError(`Unsupported Content-Encoding "${encoding}".`, null, 'unsupported_encoding');
  }
  if (
    encoding === 'gzip' ||
    encoding === 'x-gzip' ||
    compression === 'gzip-js' ||
    compression === 'gzip' ||
    isGzip(buf)
  ) {
    buf = await inflate(buf, limits, held);
    compression = undefined;
  }

  const contentType = body.contentType?.split(';')[0]?.trim().toLowerCase();
  let text = buf.toString('utf8');
  const looksLikeForm = contentType === 'application/x-www-form-urlencoded' || text.startsWith('data=');
  // `curl -d '{...}'` sends JSON labelled as a form (PostHog's docs are full of such commands): a
  // form body that opens like JSON is JSON. A real form body never starts with `{` or `[`.
  const trimmedStart = looksLikeForm ? text.trimStart() : '';
  if (looksLikeForm && (trimmedStart.startsWith('{') || trimmedStart.startsWith('['))) {
    text = trimmedStart;
  } else if (looksLikeForm) {
    const form = new URLSearchParams(text);
    // Form decoding turns '+' into ' '; base64 uses '+', so put them back.
    const data = form.get('data')?.replace(/ /g, '+');
    if (data === undefined) throw invalid('Form body has no data field.');
    compression = (form.get('compression') ?? compression)?.toLowerCase();
    text =
      compression === 'lz64' || compression === 'lz-string'
        ? decodeLz64(data, limits, held)
        : decodeBase64(data, limits, held);
  } else if (compression === 'lz64' || compression === 'lz-string') {
    text = decodeLz64(text.trim(), limits, held);
  } else if (compression === 'base64' || !looksLikeJson(text)) {
    // Browser SDKs may post a bare base64 body (compression=base64, or no hint at all).
    text = decodeBase64(text, limits, held);
  }
  return parseJson(text);
}
