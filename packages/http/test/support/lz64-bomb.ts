// Builds lz-string base64 bombs bit by bit: one 'a', then codes that each name "the previous
// string plus its first character" (the code one past the dictionary), so n codes decode to
// about n²/2 characters. lz-string's compressor would need the whole output as input.
const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=';

export function lz64Bomb(codes: number, char = 'a'): string {
  const out: string[] = [];
  let val = 0;
  let filled = 0;
  const write = (value: number, width: number) => {
    for (let i = 0; i < width; i++) {
      val = (val << 1) | ((value >> i) & 1);
      if (++filled === 6) {
        out.push(ALPHABET[val] as string);
        val = 0;
        filled = 0;
      }
    }
  };
  write(0, 2);
  write(char.charCodeAt(0), 8);
  let dictSize = 4;
  let numBits = 3;
  let enlargeIn = 4;
  for (let i = 0; i < codes; i++) {
    write(dictSize, numBits);
    dictSize++;
    if (--enlargeIn === 0) {
      enlargeIn = 2 ** numBits;
      numBits++;
    }
  }
  write(2, numBits);
  if (filled > 0) write(0, 6 - filled);
  while (out.length % 4 !== 0) out.push('=');
  return out.join('');
}

/** The number of codes whose bomb is about `bytes` long. */
export function lz64BombOfSize(bytes: number): string {
  let lo = 1;
  let hi = 1_000_000;
  while (lo < hi) {
    const mid = Math.ceil((lo + hi) / 2);
    if (lz64Bomb(mid).length <= bytes) lo = mid;
    else hi = mid - 1;
  }
  return lz64Bomb(lo);
}
