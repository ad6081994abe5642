// Turns the raw bytes of a public request (capture, decide) into a JSON value, the way PostHog's
// SDKs send them: plain JSON (application/json or text/plain), gzip (Content-Encoding: gzip,
// ?compression=gzip-js, or gzip magic bytes), lz-string base64 (`compression=lz64`, usually as a
// `data=` form field), plain base64 (`data=` form fields, or a bare base64 body), and JSON sent
// as a form (curl -d). Every decoding step is capped while it runs, not after: gzip through
// zlib's maxOutputLength (inflation stops at the first chunk past the cap, off the event loop),
// lz64 through our own decoder that counts its output (lz64.ts), base64 by its decoded size
// before decoding. A bomb therefore costs at most the cap in memory and time linear in the cap.
import { gunzip } from 'node:zlib';
import { promisify } from 'node:util';
import { PayloadTooLargeError, ValidationError } from './errors';
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
};

const invalid = (detail: string) => new ValidationError(detail, null, 'invalid_payload');
const tooLarge = (limits: DecodeLimits) =>
  new PayloadTooLargeError(
    `Decompressed request body must be smaller than ${limits.maxInflatedBytes} bytes.`,
  );

function isGzip(buf: Buffer): boolean {
  return buf.length >= 2 && buf[0] === 0x1f && buf[1] === 0x8b;
}

async function inflate(buf: Buffer, limits: DecodeLimits): Promise<Buffer> {
  try {
    // zlib stops inflating (and frees what it has) at the first output chunk past the limit.
    return await gunzipAsync(buf, { maxOutputLength: limits.maxInflatedBytes });
  } catch (error) {
    const e = error as NodeJS.ErrnoException;
    if (e.code === 'ERR_BUFFER_TOO_LARGE' || e instanceof RangeError) throw tooLarge(limits);
    throw invalid(`Could not decompress the gzip request body: ${e.message}`);
  }
}

function decodeLz64(data: string, limits: DecodeLimits): string {
  const result = decompressLz64(data, limits.maxInflatedBytes);
  if (result.kind === 'too_large') throw tooLarge(limits);
  if (result.kind === 'invalid' || result.text === '')
    throw invalid('Could not decompress the lz64 request body.');
  return result.text;
}

const BASE64 = /^[A-Za-z0-9+/=_-]*$/;

function decodeBase64(data: string, limits: DecodeLimits): string {
  const trimmed = data.trim();
  // Some SDKs post `data=<json>` without encoding it.
  if (trimmed.startsWith('{') || trimmed.startsWith('[')) return trimmed;
  // Four characters make at most three bytes: refuse before decoding anything.
  if (Math.floor((trimmed.length * 3) / 4) > limits.maxInflatedBytes) throw tooLarge(limits);
  if (!BASE64.test(trimmed)) throw invalid('The data field is neither JSON nor base64.');
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

/** The decoded JSON value of a request body. Throws 400 / 413 SettErrors. */
export async function decodeBody(body: EncodedBody, limits: DecodeLimits): Promise<unknown> {
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
    buf = await inflate(buf, limits);
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
        ? decodeLz64(data, limits)
        : decodeBase64(data, limits);
  } else if (compression === 'lz64' || compression === 'lz-string') {
    text = decodeLz64(text.trim(), limits);
  } else if (compression === 'base64' || !looksLikeJson(text)) {
    // Browser SDKs may post a bare base64 body (compression=base64, or no hint at all).
    text = decodeBase64(text, limits);
  }
  return parseJson(text);
}
