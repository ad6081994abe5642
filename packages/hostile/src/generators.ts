// Small builders for hostile payloads. Deep values are built as JSON text (never through
// JSON.stringify of a deep object, which would itself overflow the stack); compression bombs
// are built from repeated gzip members so a 150 MB inflation costs a few hundred kilobytes and a
// few milliseconds to make.
import { gzipSync } from 'node:zlib';
import { lz64RunBase64 } from './lz64-bomb';
import { prng } from '@sett/testing';

export const DEPTHS = [100, 3000, 100_000] as const;

/** `[[[...]]]`, `depth` arrays deep. */
export function deepArray(depth: number): string {
  return '['.repeat(depth) + ']'.repeat(depth);
}

/** `{"a":{"a":...1}}`, `depth` objects deep. */
export function deepObject(depth: number): string {
  return '{"a":'.repeat(depth) + '1' + '}'.repeat(depth);
}

export const DEEP_SHAPES: Array<{ shape: string; build: (depth: number) => string }> = [
  { shape: 'array', build: deepArray },
  { shape: 'object', build: deepObject },
];

/** A JSON string literal whose content is raw JSON escape text (e.g. `\\u0000`), kept as written. */
export function rawString(escaped: string): string {
  return `"${escaped}"`;
}

/** Strings JSON can carry but Postgres text/jsonb cannot: NUL and lone surrogates, as JSON escapes. */
export const UNSTORABLE_ESCAPES: Array<{ label: string; escaped: string }> = [
  { label: 'NUL', escaped: '\\u0000' },
  { label: 'NUL-inside', escaped: 'a\\u0000b' },
  { label: 'lone-high', escaped: '\\ud800' },
  { label: 'lone-low', escaped: '\\udc00' },
  { label: 'high-in-text', escaped: 'x\\ud83dy' },
  { label: 'reversed-pair', escaped: '\\udc00\\ud800' },
  { label: 'NUL-and-surrogate', escaped: '\\u0000\\udfff\\u0000' },
];

/** Byte sequences that are not UTF-8. */
export const INVALID_UTF8: Array<{ label: string; bytes: number[] }> = [
  { label: 'ff', bytes: [0xff] },
  { label: 'c3-28', bytes: [0xc3, 0x28] },
  { label: 'surrogate-ed-a0-80', bytes: [0xed, 0xa0, 0x80] },
  { label: 'overlong-c0-af', bytes: [0xc0, 0xaf] },
  { label: 'five-byte-f8', bytes: [0xf8, 0x88, 0x80, 0x80, 0x80] },
  { label: 'truncated-e2-82', bytes: [0xe2, 0x82] },
];

/** A body whose JSON text has raw (invalid UTF-8) bytes spliced in at `{{BAD}}`. */
export function withBytes(template: string, bytes: number[]): Buffer {
  const [before, after] = template.split('{{BAD}}');
  return Buffer.concat([Buffer.from(before!, 'utf8'), Buffer.from(bytes), Buffer.from(after ?? '', 'utf8')]);
}

const MB = 1024 * 1024;

/**
 * A gzip stream that inflates to `prefix`, then `fillBytes` copies of `fill`, then `suffix`.
 * gzip allows concatenated members and Node's gunzip reads them all, so one compressed
 * megabyte of filler is repeated instead of compressing the whole inflated size.
 */
export function gzipBomb(opts: {
  prefix?: string;
  fill?: string;
  fillBytes: number;
  suffix?: string;
}): Buffer {
  const fill = opts.fill ?? 'a';
  const chunk = gzipSync(Buffer.alloc(MB, fill), { level: 9 });
  const parts: Buffer[] = [];
  if (opts.prefix) parts.push(gzipSync(opts.prefix));
  const whole = Math.floor(opts.fillBytes / MB);
  for (let i = 0; i < whole; i++) parts.push(chunk);
  const rest = opts.fillBytes - whole * MB;
  if (rest > 0) parts.push(gzipSync(Buffer.alloc(rest, fill)));
  if (opts.suffix) parts.push(gzipSync(opts.suffix));
  return Buffer.concat(parts);
}

/** One gzip member holding `text` (a single member: some decoders stop after the first). */
export function gzipOne(text: string | Buffer): Buffer {
  return gzipSync(text);
}

/** lz-string base64 of `count` copies of one character. */
export function lz64Bomb(count: number): string {
  return lz64RunBase64(count);
}

/** A small deterministic PRNG (mulberry32), shared with the other tests. */
export { prng };

const PATH_PIECES = [
  'api',
  'users',
  'projects',
  'i',
  'v0',
  'e',
  'batch',
  'decide',
  'flags',
  '_health',
  '_ready',
  '_metrics',
  '..',
  '.',
  '%2e%2e',
  '%2F',
  '%00',
  '%E0%A4%A',
  '%',
  '%zz',
  '%ED%A0%80',
  '%FF',
  '@me',
  '__proto__',
  'constructor',
  'prototype',
  '1',
  '-1',
  '99999999999999999999',
  '1e400',
  'NaN',
  '~',
  '*',
  ';',
  ',',
  '%20',
  '+',
  'feature_flags',
  'early_access_feature',
  'events',
  'persons',
  'personal_api_keys',
  'hedgehog_config',
  'x'.repeat(300),
];

/** `count` random paths built from known and hostile pieces, with random trailing slashes and queries. */
export function randomPaths(count: number, seed: number): string[] {
  const rnd = prng(seed);
  const pick = <T>(list: readonly T[]) => list[Math.floor(rnd() * list.length)]!;
  const out: string[] = [];
  for (let i = 0; i < count; i++) {
    const segments = 1 + Math.floor(rnd() * 6);
    let path = '';
    for (let s = 0; s < segments; s++) path += (rnd() < 0.1 ? '//' : '/') + pick(PATH_PIECES);
    if (rnd() < 0.5) path += '/';
    if (rnd() < 0.3) path += `?${pick(PATH_PIECES)}=${pick(PATH_PIECES)}`;
    out.push(path);
  }
  return out;
}
