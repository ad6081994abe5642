// Property tests of the public body decoder: our lz64 decoder against the lz-string package,
// random bytes through decodeBody (only 400/413 come out), round trips of every encoding the
// SDKs use, and the decompression cap (nothing past it is ever returned; bombs stop at it).
import { gzipSync } from 'node:zlib';
import fc from 'fast-check';
import { compressToBase64, decompressFromBase64 } from 'lz-string';
import { decodeBody, PayloadTooLargeError, ValidationError, type EncodedBody } from '../src';
import { decompressLz64 } from '../src/lz64';
import { lz64Bomb, lz64BombOfSize } from './support/lz64-bomb';

/** Our decoder's size estimate: UTF-8 bytes per UTF-16 code unit (a surrogate counts 3). */
const countedBytes = (s: string) => {
  let n = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    n += c < 0x80 ? 1 : c < 0x800 ? 2 : 3;
  }
  return n;
};

const anyText = fc.oneof(
  fc.string({ unit: 'grapheme', maxLength: 300 }),
  fc.string({ unit: 'binary', maxLength: 300 }),
  fc.string({ unit: fc.constantFrom('a', 'b', '{', '"'), maxLength: 2000 }),
);

describe('decompressLz64', () => {
  it('decodes whatever lz-string compresses to the same string', () => {
    fc.assert(
      fc.property(anyText, (text) => {
        const result = decompressLz64(compressToBase64(text), 10_000_000);
        if (text === '') expect(result.kind).toBe('invalid');
        else expect(result).toEqual({ kind: 'ok', text });
      }),
      { numRuns: 500 },
    );
  });

  it('agrees with lz-string on random input, or refuses it', () => {
    const base64ish = fc.string({
      unit: fc.constantFrom(...'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=!é '),
      maxLength: 200,
    });
    fc.assert(
      fc.property(fc.oneof(base64ish, fc.string({ maxLength: 100 })), (input) => {
        const ours = decompressLz64(input, 10_000_000);
        if (ours.kind === 'ok') expect(ours.text).toBe(decompressFromBase64(input));
        else expect(ours.kind).toBe('invalid');
      }),
      { numRuns: 2000 },
    );
  });

  it('returns nothing past the cap, and stops at it', () => {
    fc.assert(
      fc.property(anyText, fc.nat({ max: 3000 }), (text, cap) => {
        fc.pre(text !== '');
        const result = decompressLz64(compressToBase64(text), cap);
        if (countedBytes(text) <= cap) expect(result).toEqual({ kind: 'ok', text });
        else expect(result.kind).toBe('too_large');
        if (result.kind === 'ok') expect(Buffer.byteLength(result.text)).toBeLessThanOrEqual(cap);
      }),
      { numRuns: 500 },
    );
  });

  it('stops a 74 KB bomb (about 500 million characters) at the cap, quickly and without the memory', () => {
    const bomb = lz64BombOfSize(74 * 1024);
    expect(decompressFromBase64(lz64Bomb(1000))).toHaveLength(501_501); // it is a bomb
    const rss = process.memoryUsage().rss;
    const started = process.hrtime.bigint();
    expect(decompressLz64(bomb, 100 * 1024 * 1024).kind).toBe('too_large');
    expect(decompressLz64(bomb, 1024 * 1024).kind).toBe('too_large');
    // lz-string itself needs seconds and over a gigabyte for this one.
    expect(Number(process.hrtime.bigint() - started) / 1e6).toBeLessThan(1500);
    expect(process.memoryUsage().rss - rss).toBeLessThan(200 * 2 ** 20);
  });
});

const body = (raw: Buffer | string, extra: Partial<EncodedBody> = {}): EncodedBody => ({
  raw: Buffer.isBuffer(raw) ? raw : Buffer.from(raw),
  contentType: undefined,
  contentEncoding: undefined,
  compression: undefined,
  ...extra,
});

const expectOnly4xx = (error: unknown) => {
  if (!(error instanceof ValidationError) && !(error instanceof PayloadTooLargeError)) throw error;
};

const FORM = 'application/x-www-form-urlencoded';

/** Every way an SDK (or curl) may send a JSON text. */
const encodings: Record<string, (json: string) => EncodedBody> = {
  plain: (json) => body(json, { contentType: 'application/json' }),
  text: (json) => body(json, { contentType: 'text/plain' }),
  gzipHeader: (json) => body(gzipSync(json), { contentEncoding: 'gzip' }),
  gzipJs: (json) => body(gzipSync(json), { compression: 'gzip-js', contentType: 'text/plain' }),
  gzipSniffed: (json) => body(gzipSync(json)),
  lz64Form: (json) =>
    body(`data=${encodeURIComponent(compressToBase64(json))}&compression=lz64`, { contentType: FORM }),
  lz64Query: (json) =>
    body(`data=${encodeURIComponent(compressToBase64(json))}`, { contentType: FORM, compression: 'lz64' }),
  lz64Bare: (json) => body(compressToBase64(json), { compression: 'lz64', contentType: 'text/plain' }),
  base64Form: (json) =>
    body(`data=${encodeURIComponent(Buffer.from(json).toString('base64'))}`, { contentType: FORM }),
  base64Bare: (json) => body(Buffer.from(json).toString('base64'), { contentType: 'text/plain' }),
  curlForm: (json) => body(json, { contentType: FORM }),
};
const COMPRESSED = new Set([
  'gzipHeader',
  'gzipJs',
  'gzipSniffed',
  'lz64Form',
  'lz64Query',
  'lz64Bare',
  'base64Form',
  'base64Bare',
]);

const jsonBody = fc.oneof(
  fc.dictionary(fc.string(), fc.jsonValue({ maxDepth: 3 }), { minKeys: 1 }),
  fc.array(fc.jsonValue({ maxDepth: 3 }), { minLength: 1, maxLength: 5 }),
);

describe('decodeBody', () => {
  it('gives back what was encoded, in every encoding', async () => {
    await fc.assert(
      fc.asyncProperty(jsonBody, fc.constantFrom(...Object.keys(encodings)), async (value, name) => {
        const json = JSON.stringify(value);
        const decoded = await decodeBody(encodings[name]!(json), { maxInflatedBytes: 10_000_000 });
        expect(decoded).toEqual(JSON.parse(json));
      }),
      { numRuns: 400 },
    );
  });

  it('never returns a decompressed body past the cap, and answers 413 for one', async () => {
    await fc.assert(
      fc.asyncProperty(
        jsonBody,
        fc.constantFrom(...COMPRESSED),
        fc.integer({ min: 1, max: 2000 }),
        async (value, name, cap) => {
          const json = JSON.stringify(value);
          const outcome = await decodeBody(encodings[name]!(json), { maxInflatedBytes: cap }).then(
            () => 'ok',
            (e: unknown) => e,
          );
          if (outcome === 'ok') expect(Buffer.byteLength(json)).toBeLessThanOrEqual(cap);
          else expect(outcome).toBeInstanceOf(PayloadTooLargeError);
          // Only countedBytes can be over the cap without the real size being so (surrogates).
          if (countedBytes(json) <= cap - 2) expect(outcome).toBe('ok');
        },
      ),
      { numRuns: 400 },
    );
  });

  it('turns random bytes and headers into a value or a 400/413, nothing else', async () => {
    const header = (values: string[]) =>
      fc.option(fc.oneof(fc.constantFrom(...values), fc.string()), { nil: undefined });
    const raw = fc.oneof(
      fc.uint8Array({ maxLength: 400 }).map((a) => Buffer.from(a)),
      fc.uint8Array({ maxLength: 400 }).map((a) => gzipSync(a)),
      fc.uint8Array({ maxLength: 400 }).map((a) => Buffer.concat([Buffer.from([0x1f, 0x8b]), a])),
      fc.string().map((s) => Buffer.from(`data=${encodeURIComponent(s)}&compression=lz64`)),
      fc.string().map((s) => Buffer.from(`data=${s}`)),
      fc.string().map((s) => Buffer.from(s)),
    );
    await fc.assert(
      fc.asyncProperty(
        raw,
        header(['application/json', 'text/plain', FORM]),
        header(['gzip', 'x-gzip', 'identity']),
        header(['gzip-js', 'lz64', 'base64', 'lz-string']),
        fc.integer({ min: 1, max: 5000 }),
        async (bytes, contentType, contentEncoding, compression, cap) => {
          await decodeBody(
            { raw: bytes, contentType, contentEncoding, compression },
            { maxInflatedBytes: cap },
          ).catch(expectOnly4xx);
        },
      ),
      { numRuns: 1000 },
    );
  });

  it('stops gzip inflation at the cap: 1 GB in 1 MB of gzip members costs neither', async () => {
    const member = gzipSync(Buffer.alloc(1024 * 1024));
    const bomb = Buffer.concat(Array.from({ length: 1024 }, () => member));
    const rss = process.memoryUsage().rss;
    const error = await decodeBody(body(bomb, { contentEncoding: 'gzip' }), {
      maxInflatedBytes: 1024 * 1024,
    }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(PayloadTooLargeError);
    expect((error as PayloadTooLargeError).status).toBe(413);
    expect(process.memoryUsage().rss - rss).toBeLessThan(100 * 2 ** 20);
  });

  it('refuses base64 that would decode past the cap before decoding it', async () => {
    const b64 = Buffer.alloc(3000, 0x41).toString('base64');
    await expect(
      decodeBody(body(`data=${b64}`, { contentType: FORM }), { maxInflatedBytes: 2999 }),
    ).rejects.toBeInstanceOf(PayloadTooLargeError);
    await expect(
      decodeBody(body(`data=${b64}`, { contentType: FORM }), { maxInflatedBytes: 3000 }),
    ).rejects.toBeInstanceOf(
      ValidationError, // decodes to 'AAA…', which is not JSON
    );
  });
});
