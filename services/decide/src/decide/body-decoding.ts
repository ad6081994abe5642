// The JSON object of a decide/flags request. Decoding (gzip, lz64, base64, form fields, curl's
// form-labelled JSON) is the shared public-body decoder of @sett/http, the same as capture's;
// decide adds that the result must be one JSON object.
import { decodeBody, ValidationError, type DecompressionBudget } from '@sett/http';

export interface EncodedBody {
  /** Raw body bytes, as they came off the wire. */
  body: Buffer;
  contentType?: string;
  /** The Content-Encoding header (gzip is undone with the same limits as every other encoding). */
  contentEncoding?: string;
  /** The `compression` query parameter, if any. */
  compression?: string;
  /** Largest decompressed body accepted. */
  maxBytes: number;
  /** The process' decompression budget, held while the body is decoded (bodies are small). */
  budget?: DecompressionBudget;
}

export async function decodeDecideBody(input: EncodedBody): Promise<Record<string, unknown>> {
  const parsed = await decodeBody(
    {
      raw: input.body,
      contentType: input.contentType,
      contentEncoding: input.contentEncoding,
      compression: input.compression,
    },
    { maxInflatedBytes: input.maxBytes, budget: input.budget },
  );
  if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) {
    throw new ValidationError('Malformed request body: expected a JSON object.', null, 'invalid_payload');
  }
  return parsed as Record<string, unknown>;
}
