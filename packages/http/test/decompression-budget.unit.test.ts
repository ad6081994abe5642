// The decompression budget alone, and body decoding with one: sizes are reserved before the
// bytes exist (a gzip body's stated size, a base64 body's decoded size, an lz64 body decoded no
// further than the budget has room for), over-budget bodies are 503 with Retry-After before
// anything is inflated, and reservations are released when decoding fails or the response
// closes.
import { EventEmitter } from 'node:events';
import { gzipSync } from 'node:zlib';
import { compressToBase64 } from 'lz-string';
import {
  createDecompressionBudget,
  decodeBody,
  PayloadTooLargeError,
  ServiceUnavailableError,
  SMALL_BODY_BYTES,
  ValidationError,
  type EncodedBody,
} from '../src';

const MB = 1024 * 1024;
const body = (raw: Buffer | string, extra: Partial<EncodedBody> = {}): EncodedBody => ({
  raw: Buffer.isBuffer(raw) ? raw : Buffer.from(raw),
  contentType: 'application/json',
  contentEncoding: undefined,
  compression: undefined,
  ...extra,
});
/** A JSON body of exactly `bytes` bytes: one event with a long property. */
const jsonOf = (bytes: number) => {
  const head = '{"event":"e","p":"';
  return head + 'a'.repeat(bytes - head.length - 2) + '"}';
};

describe('createDecompressionBudget', () => {
  it('keeps a quarter for small bodies, three quarters for large ones', () => {
    const budget = createDecompressionBudget(16 * MB);
    const large = [budget.reserve(5 * MB), budget.reserve(5 * MB)];
    expect(large.every(Boolean)).toBe(true);
    expect(budget.reserve(5 * MB)).toBeUndefined(); // 15 MB > 12 MB
    // Small bodies still fit in their own share.
    const small = Array.from({ length: 4 }, () => budget.reserve(SMALL_BODY_BYTES));
    expect(small.every(Boolean)).toBe(true);
    expect(budget.reserve(1)).toBeUndefined();
    expect(budget.inFlight()).toBe(14 * MB);
    for (const release of [...large, ...small]) release!();
    expect(budget.inFlight()).toBe(0);
  });

  it('takes any one body into an empty share, so a cap above the share stays reachable', () => {
    const budget = createDecompressionBudget(4 * MB);
    const huge = budget.reserve(100 * MB);
    expect(huge).toBeDefined();
    expect(budget.reserve(2 * MB)).toBeUndefined();
    expect(budget.room()).toBe(SMALL_BODY_BYTES);
    huge!();
    huge!(); // releasing twice releases once
    expect(budget.inFlight()).toBe(0);
    expect(budget.room()).toBe(Infinity);
  });
});

describe('decodeBody with a budget', () => {
  const limits = (budget = createDecompressionBudget(16 * MB)) => ({ maxInflatedBytes: 50 * MB, budget });

  it('reserves a gzip body by its stated size before inflating it: 503 with Retry-After', async () => {
    const l = limits();
    const hold = l.budget.reserve(12 * MB)!; // the large share is full
    const gz = gzipSync(jsonOf(2 * MB));
    const error = await decodeBody(body(gz, { contentEncoding: 'gzip' }), l).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ServiceUnavailableError);
    expect((error as ServiceUnavailableError).headers['Retry-After']).toBe('1');
    // Small bodies are not held up by the large ones.
    expect(await decodeBody(body(gzipSync(jsonOf(1000)), { contentEncoding: 'gzip' }), l)).toMatchObject({
      event: 'e',
    });
    hold();
    expect(await decodeBody(body(gz, { contentEncoding: 'gzip' }), l)).toMatchObject({ event: 'e' });
    expect(l.budget.inFlight()).toBe(0);
  });

  it('refuses a gzip body stating more than the cap at once, and one longer than it states', async () => {
    const l = limits();
    const gz = gzipSync(jsonOf(60 * MB));
    await expect(decodeBody(body(gz, { contentEncoding: 'gzip' }), l)).rejects.toBeInstanceOf(
      PayloadTooLargeError,
    );
    const lying = Buffer.from(gzipSync(jsonOf(3 * MB)));
    lying.writeUInt32LE(1000, lying.length - 4);
    const error = await decodeBody(body(lying, { contentEncoding: 'gzip' }), l).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ValidationError);
    expect((error as Error).message).toMatch(/longer than its trailer says/);
    expect(l.budget.inFlight()).toBe(0);
  });

  it('reserves what an lz64 body decodes to (503 when it does not fit), within the cap (413)', async () => {
    // Small numbers: lz-string's own compressor is slow on long inputs.
    const KB = 1024;
    const l = limits(createDecompressionBudget(400 * KB)); // the small share holds 100 KB
    const lz = `data=${encodeURIComponent(compressToBase64(jsonOf(60 * KB)))}&compression=lz64`;
    const form = { contentType: 'application/x-www-form-urlencoded' };
    const hold = l.budget.reserve(50 * KB)!;
    await expect(decodeBody(body(lz, form), l)).rejects.toBeInstanceOf(ServiceUnavailableError);
    hold();
    expect(await decodeBody(body(lz, form), l)).toMatchObject({ event: 'e' });
    await expect(
      decodeBody(body(lz, form), { maxInflatedBytes: 50 * KB, budget: l.budget }),
    ).rejects.toBeInstanceOf(PayloadTooLargeError);
    expect(l.budget.inFlight()).toBe(0);
  });

  it('reserves base64 by its decoded size', async () => {
    const l = limits();
    const hold = l.budget.reserve(12 * MB)!;
    const b64 = Buffer.from(jsonOf(2 * MB)).toString('base64');
    await expect(decodeBody(body(b64, { contentType: 'text/plain' }), l)).rejects.toBeInstanceOf(
      ServiceUnavailableError,
    );
    hold();
    expect(await decodeBody(body(b64, { contentType: 'text/plain' }), l)).toMatchObject({ event: 'e' });
  });

  it('holds the reservation until the response closes, and releases it on a decoding error', async () => {
    const l = limits();
    const res = Object.assign(new EventEmitter(), { closed: false });
    await decodeBody(body(gzipSync(jsonOf(2 * MB)), { contentEncoding: 'gzip' }), { ...l, heldUntil: res });
    expect(l.budget.inFlight()).toBe(2 * MB);
    res.closed = true;
    res.emit('close');
    expect(l.budget.inFlight()).toBe(0);
    // Already closed (the client went away meanwhile): released at once.
    await decodeBody(body(gzipSync(jsonOf(2 * MB)), { contentEncoding: 'gzip' }), { ...l, heldUntil: res });
    expect(l.budget.inFlight()).toBe(0);
    await expect(
      decodeBody(body(gzipSync('{"not json'), { contentEncoding: 'gzip' }), { ...l, heldUntil: res }),
    ).rejects.toBeInstanceOf(ValidationError);
    expect(l.budget.inFlight()).toBe(0);
  });

  it('does not count plain bodies', async () => {
    const l = limits();
    l.budget.reserve(12 * MB);
    l.budget.reserve(4 * MB);
    expect(await decodeBody(body(jsonOf(2 * MB)), l)).toMatchObject({ event: 'e' });
  });
});
