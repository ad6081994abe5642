import { gzipSync } from 'node:zlib';
import { compressToBase64 } from 'lz-string';
import { decodeBody, PayloadTooLargeError, ValidationError, type EncodedBody } from '../src';

const limits = { maxInflatedBytes: 100_000 };
const payload = { api_key: 'phc_x', event: 'e', distinct_id: 'd', properties: { s: 'a+b/c' } };
const json = JSON.stringify(payload);
const body = (raw: Buffer | string, extra: Partial<EncodedBody> = {}): EncodedBody => ({
  raw: Buffer.isBuffer(raw) ? raw : Buffer.from(raw),
  contentType: 'application/json',
  contentEncoding: undefined,
  compression: undefined,
  ...extra,
});

describe('decodeBody', () => {
  it('parses plain JSON and text/plain JSON', async () => {
    expect(await decodeBody(body(json), limits)).toEqual(payload);
    expect(await decodeBody(body(json, { contentType: 'text/plain;charset=UTF-8' }), limits)).toEqual(
      payload,
    );
  });

  it('gunzips by header, by compression=gzip-js, and by magic bytes', async () => {
    const gz = gzipSync(json);
    expect(await decodeBody(body(gz, { contentEncoding: 'gzip' }), limits)).toEqual(payload);
    expect(await decodeBody(body(gz, { compression: 'gzip-js', contentType: 'text/plain' }), limits)).toEqual(
      payload,
    );
    expect(await decodeBody(body(gz, { contentType: undefined }), limits)).toEqual(payload);
  });

  it('decodes lz64 and base64 form bodies, restoring + turned into spaces', async () => {
    const lz = compressToBase64(json);
    const form = (data: string, c?: string) =>
      `data=${encodeURIComponent(data)}${c ? `&compression=${c}` : ''}`;
    const ct = { contentType: 'application/x-www-form-urlencoded' };
    expect(await decodeBody(body(form(lz, 'lz64'), ct), limits)).toEqual(payload);
    expect(await decodeBody(body(form(lz), { ...ct, compression: 'lz64' }), limits)).toEqual(payload);
    // An unescaped '+' arrives as ' ' after form decoding.
    expect(await decodeBody(body(`data=${lz}`, { ...ct, compression: 'lz64' }), limits)).toEqual(payload);
    const b64 = Buffer.from(json).toString('base64');
    expect(await decodeBody(body(form(b64), ct), limits)).toEqual(payload);
    expect(await decodeBody(body(form(json), ct), limits)).toEqual(payload);
  });

  it('parses JSON sent as a form without a data field (curl -d), batches and bodies mentioning data= too', async () => {
    const ct = { contentType: 'application/x-www-form-urlencoded' };
    expect(await decodeBody(body(json, ct), limits)).toEqual(payload);
    expect(await decodeBody(body(`\n ${JSON.stringify([payload])}`, ct), limits)).toEqual([payload]);
    // Form parsing would find a "data" field inside this JSON; it is still JSON.
    const tricky = { ...payload, properties: { $current_url: 'https://x.test/?a=1&data=abc' } };
    expect(await decodeBody(body(JSON.stringify(tricky), ct), limits)).toEqual(tricky);
    // Malformed JSON in a form body is a JSON error, not "no data field".
    const error = (await decodeBody(body('{nope', ct), limits).catch((e: unknown) => e)) as ValidationError;
    expect(error).toBeInstanceOf(ValidationError);
    expect(error.message).toMatch(/not valid JSON/);
  });

  it('refuses a zip bomb with 413', async () => {
    const bomb = gzipSync(Buffer.alloc(10_000_000, 0x20));
    expect(bomb.length).toBeLessThan(20_000);
    await expect(decodeBody(body(bomb, { contentEncoding: 'gzip' }), limits)).rejects.toBeInstanceOf(
      PayloadTooLargeError,
    );
  });

  it.each([
    ['empty body', body('')],
    ['not JSON', body('{nope')],
    ['corrupt gzip', body(Buffer.from([0x1f, 0x8b, 1, 2, 3]), { contentEncoding: 'gzip' })],
    [
      'corrupt lz64',
      body('data=!!!!&compression=lz64', { contentType: 'application/x-www-form-urlencoded' }),
    ],
    ['form without data', body('foo=bar', { contentType: 'application/x-www-form-urlencoded' })],
    ['unknown encoding', body(json, { contentEncoding: 'br' })],
  ])('answers 400 for %s', async (_name, b) => {
    const error = await decodeBody(b, limits).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ValidationError);
    expect((error as ValidationError).status).toBe(400);
  });
});
