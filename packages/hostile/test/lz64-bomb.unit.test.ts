// The lz64 bomb builder must emit exactly what lz-string's compressToBase64 would, or the
// corpus's lz64 cases would test a parse error instead of a decompression bomb.
import LZString from 'lz-string';
import { lz64RunBase64 } from '../src/lz64-bomb';

describe('lz64RunBase64', () => {
  it('matches lz-string compressToBase64 for runs of 0..600 characters', () => {
    const mismatches: number[] = [];
    for (let n = 0; n <= 600; n++) {
      if (lz64RunBase64(n) !== LZString.compressToBase64('a'.repeat(n))) mismatches.push(n);
    }
    expect(mismatches).toEqual([]);
  });

  it('decompresses to the full run for a large count, from a small input', () => {
    const bomb = lz64RunBase64(3_000_000);
    expect(bomb.length).toBeLessThan(10_000);
    expect(LZString.decompressFromBase64(bomb)).toBe('a'.repeat(3_000_000));
  });
});
