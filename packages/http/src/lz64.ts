// lz-string's base64 flavour (`decompressFromBase64`, what posthog-js sends as compression=lz64),
// decompressed with a cap on the output. The lz-string package builds the whole output before
// anyone can look at its size, and its format lets a few kilobytes name gigabytes (each code may
// stand for the previous string plus one character), so this is our own decoder of the same
// format that counts while it goes and stops at the cap.
//
// The format: the input is base64 text, 6 bits per character, most significant bit first; codes
// are read least significant bit first, `numBits` wide (starting at 3 after a 2-bit first code).
// Code 0 is a new 8-bit character, 1 a new 16-bit character, 2 the end; any other code is a
// dictionary entry, or (one past the end of the dictionary) the previous string plus its own first
// character. Each decoded entry adds "previous string + first character of this one" to the
// dictionary; the code width grows by one bit when the dictionary fills the current width.
//
// For every input lz-string decodes, this returns the same string; inputs it turns into garbage
// (a first code of 3) are refused. Output is counted as UTF-8 bytes (a surrogate pair counts as
// 6, never less than its real size).

export type Lz64Result =
  | { kind: 'ok'; text: string }
  /** Not lz-string data (lz-string returns null or an empty string for these). */
  | { kind: 'invalid' }
  /** The output would exceed maxBytes; decoding stopped there. */
  | { kind: 'too_large' };

const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=';
/** Character code -> 6-bit value; characters outside the alphabet read as 0, as in lz-string. */
const VALUES = new Uint8Array(128);
for (let i = 0; i < ALPHABET.length; i++) VALUES[ALPHABET.charCodeAt(i)] = i & 63;

const INVALID: Lz64Result = { kind: 'invalid' };
const TOO_LARGE: Lz64Result = { kind: 'too_large' };

function utf8Bytes(code: number): number {
  return code < 0x80 ? 1 : code < 0x800 ? 2 : 3;
}

export function decompressLz64(input: string, maxBytes: number): Lz64Result {
  const length = input.length;
  if (length === 0) return INVALID;

  // Bit reader: `val` is the current 6-bit value, `position` the mask of the next bit.
  let index = 0;
  let val = 0;
  let position = 0;
  const nextValue = () => {
    const code = index < length ? input.charCodeAt(index) : 0;
    index++;
    val = code < 128 ? (VALUES[code] as number) : 0;
    position = 32;
  };
  nextValue();
  const read = (width: number): number => {
    let bits = 0;
    for (let power = 1, i = 0; i < width; i++, power *= 2) {
      if (val & position) bits += power;
      position >>= 1;
      if (position === 0) nextValue();
    }
    return bits;
  };

  // Entries 0..2 are the control codes; entries from 3 on are strings, with their first
  // character code and UTF-8 size kept beside them so nothing re-measures a string.
  const dictionary: string[] = ['', '', ''];
  const firstCode: number[] = [0, 0, 0];
  const sizes: number[] = [0, 0, 0];
  let enlargeIn = 4;
  let numBits = 3;

  const first = read(2);
  if (first === 2) return INVALID; // lz-string: ""
  if (first === 3) return INVALID; // lz-string: garbage built from `undefined`
  const code0 = read(first === 0 ? 8 : 16);
  let w = String.fromCharCode(code0);
  let wFirst = code0;
  let wSize = utf8Bytes(code0);
  dictionary.push(w);
  firstCode.push(code0);
  sizes.push(wSize);
  let total = wSize;
  if (total > maxBytes) return TOO_LARGE;
  const result: string[] = [w];

  for (;;) {
    // lz-string gives up once the reader has run past the end of the input.
    if (index > length) return INVALID;
    let c = read(numBits);
    if (c === 2) return { kind: 'ok', text: result.join('') };
    if (c === 0 || c === 1) {
      const code = read(c === 0 ? 8 : 16);
      dictionary.push(String.fromCharCode(code));
      firstCode.push(code);
      sizes.push(utf8Bytes(code));
      c = dictionary.length - 1;
      if (--enlargeIn === 0) {
        enlargeIn = 2 ** numBits;
        numBits++;
      }
    }

    let entry: string;
    let entryFirst: number;
    let entrySize: number;
    if (c < dictionary.length) {
      entry = dictionary[c] as string;
      entryFirst = firstCode[c] as number;
      entrySize = sizes[c] as number;
    } else if (c === dictionary.length) {
      entry = w + String.fromCharCode(wFirst);
      entryFirst = wFirst;
      entrySize = wSize + utf8Bytes(wFirst);
    } else {
      return INVALID;
    }
    total += entrySize;
    if (total > maxBytes) return TOO_LARGE;
    result.push(entry);

    dictionary.push(w + String.fromCharCode(entryFirst));
    firstCode.push(wFirst);
    sizes.push(wSize + utf8Bytes(entryFirst));
    if (--enlargeIn === 0) {
      enlargeIn = 2 ** numBits;
      numBits++;
    }
    w = entry;
    wFirst = entryFirst;
    wSize = entrySize;
  }
}
