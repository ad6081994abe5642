// An lz-string (compressToBase64) stream that decompresses to one character repeated `count`
// times, built in O(sqrt(count)) steps. lz-string's own compressor needs minutes for tens of
// megabytes (it builds ever longer dictionary strings), so a decompression bomb for the lz64
// body format is emitted token by token instead: for a run of one character the dictionary is
// the chain c, cc, ccc, ... and each token names the longest entry so far. The unit test checks
// the output against lz-string's compressToBase64 for small counts.

const BASE64 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=';

class BitWriter {
  private readonly out: string[] = [];
  private val = 0;
  private pos = 0;

  /** Writes `bits` bits of value, least significant first (lz-string's order). */
  write(value: number, bits: number): void {
    for (let i = 0; i < bits; i++) {
      this.val = (this.val << 1) | (value & 1);
      value >>= 1;
      if (this.pos === 5) {
        this.pos = 0;
        this.out.push(BASE64.charAt(this.val));
        this.val = 0;
      } else {
        this.pos++;
      }
    }
  }

  finish(): string {
    // lz-string flushes by shifting zeros in until the last 6-bit group is full.
    for (;;) {
      this.val <<= 1;
      if (this.pos === 5) {
        this.out.push(BASE64.charAt(this.val));
        break;
      }
      this.pos++;
    }
    const res = this.out.join('');
    return res + ['', '===', '==', '='][res.length % 4];
  }
}

/** compressToBase64(char.repeat(count)) without ever holding the repeated string. */
export function lz64RunBase64(count: number, char = 'a'): string {
  const code = char.charCodeAt(0);
  if (code >= 256) throw new Error('single-byte characters only');
  const w = new BitWriter();
  if (count === 0) {
    w.write(2, 2); // end of stream with the initial width
    return w.finish();
  }
  let numBits = 2;
  let enlargeIn = 2;
  let dictSize = 4; // 0, 1, 2 reserved; 3 = the character itself
  let longest = 1; // longest run in the dictionary: runs of 1..longest have codes 2 + length
  let literalPending = true;
  const bump = () => {
    enlargeIn--;
    if (enlargeIn === 0) {
      enlargeIn = 2 ** numBits;
      numBits++;
    }
  };
  const emit = (length: number) => {
    if (length === 1 && literalPending) {
      w.write(0, numBits);
      w.write(code, 8);
      bump();
      literalPending = false;
    } else {
      w.write(length + 2, numBits);
    }
    bump();
  };
  let consumed = 1; // w = one character
  let wLength = 1;
  while (consumed < count) {
    const grow = Math.min(longest - wLength, count - consumed);
    wLength += grow;
    consumed += grow;
    if (consumed >= count) break;
    // The next character makes a run one longer than any entry: emit w, add it, restart.
    emit(wLength);
    longest = Math.max(longest, wLength + 1);
    dictSize++;
    consumed++;
    wLength = 1;
  }
  // Flush w the way lz-string does at the end of the input (no dictionary entry is added).
  if (literalPending && wLength === 1) {
    w.write(0, numBits);
    w.write(code, 8);
    bump();
    bump();
  } else {
    w.write(wLength + 2, numBits);
    bump();
  }
  void dictSize;
  w.write(2, numBits);
  return w.finish();
}
