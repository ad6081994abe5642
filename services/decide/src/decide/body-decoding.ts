// Turns the bytes of a decide/flags request into the JSON object it carries. SDKs send plain
// JSON, gzip (Content-Encoding or `?compression=gzip-js`), or a `data=` form field holding
// base64 or lz-string base64 ("lz64") JSON, as PostHog's decide endpoint accepts. Pure.
import { gunzipSync } from 'node:zlib';
import LZString from 'lz-string';
import { PayloadTooLargeError, ValidationError } from '@sett/http';

export interface EncodedBody {
  /** Raw body bytes (already inflated when the request had Content-Encoding: gzip). */
  body: Buffer;
  contentType?: string;
  /** The `compression` query parameter, if any. */
  compression?: string;
  /** Largest decompressed body accepted. */
  maxBytes: number;
}

const GZIP_MAGIC_0 = 0x1f;
const GZIP_MAGIC_1 = 0x8b;

function malformed(detail: string): ValidationError {
  return new ValidationError(detail, null, 'invalid_payload');
}

export function decodeDecideBody(input: EncodedBody): Record<string, unknown> {
  let compression = input.compression?.toLowerCase();
  let bytes = input.body;
  if (bytes.length === 0) throw malformed('Malformed request body: empty.');

  // gzip by query parameter, or by sniffing the magic bytes (some SDKs set neither header nor
  // parameter); Content-Encoding gzip was already undone by the body reader.
  const gzipMagic = bytes[0] === GZIP_MAGIC_0 && bytes[1] === GZIP_MAGIC_1;
  if (compression === 'gzip' || compression === 'gzip-js' || gzipMagic) {
    bytes = gunzip(bytes, input.maxBytes);
    compression = undefined;
  }

  let text = bytes.toString('utf8');
  const contentType = input.contentType?.toLowerCase() ?? '';
  // `curl -d '{...}'` labels plain JSON as form-urlencoded: a "form" without a data field whose
  // raw text is a JSON object is read as that JSON (form-decoding it would mangle "+" and "%").
  const formLabelledJson = !text.startsWith('data=') && text.trimStart().startsWith('{');
  if (
    (contentType.includes('application/x-www-form-urlencoded') || text.startsWith('data=')) &&
    !formLabelledJson
  ) {
    const form = new URLSearchParams(text);
    const data = form.get('data');
    if (data === null) throw malformed('Malformed request body: form body without a data field.');
    compression = form.get('compression')?.toLowerCase() ?? compression;
    text = data;
  }

  if (compression === 'lz64' || compression === 'lz-string') {
    // URLSearchParams turns an unescaped "+" into a space; lz-string's base64 needs it back.
    const inflated = LZString.decompressFromBase64(text.replace(/ /g, '+'));
    if (!inflated) throw malformed('Malformed request body: invalid lz64 data.');
    text = inflated;
  } else if (compression === 'base64' || !looksLikeJson(text)) {
    text = Buffer.from(text.trim().replace(/ /g, '+'), 'base64').toString('utf8');
  }
  if (Buffer.byteLength(text) > input.maxBytes) throw new PayloadTooLargeError();

  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw malformed('Malformed request body: not valid JSON.');
  }
  if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) {
    throw malformed('Malformed request body: expected a JSON object.');
  }
  return parsed as Record<string, unknown>;
}

function looksLikeJson(text: string): boolean {
  const first = text.trimStart()[0];
  return first === '{' || first === '[';
}

function gunzip(bytes: Buffer, maxBytes: number): Buffer {
  try {
    // maxOutputLength bounds a zip bomb before it is fully inflated.
    return gunzipSync(bytes, { maxOutputLength: maxBytes });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE') throw new PayloadTooLargeError();
    throw malformed('Malformed request body: invalid gzip data.');
  }
}
