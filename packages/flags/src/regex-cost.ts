// What a flag pattern would cost to compile, read from its text before compiling it. RE2 keeps
// matching linear, but compiling is not bounded by the pattern's length: a counted repeat is
// expanded into copies (`.{999}` is about 1,000 instructions, and a 30-character pattern of five
// of them about 5,000), and a Unicode property class (`\pL`) builds a table of thousands of
// ranges each time it appears. Compiling runs synchronously on the event loop every project
// shares (management when a flag is saved, decide when it first evaluates one), so a pattern is
// only compiled when this estimate says it is small; the compiled program's real size is checked
// afterwards against the limit in property-match.ts.
//
// The estimate is in instructions: an atom (a character, `.`, a class, an anchor) is 1; a
// capturing group adds 2, each `|` 1, `*` `+` `?` 1; `{n}` multiplies what it repeats by n,
// `{n,m}` by m (plus the optional copies). On top, each Unicode property class written in the
// pattern costs about as much to build as 64 instructions (once: a repeat copies the built
// class). Under case folding (`(?i)`, anywhere in the pattern) a class range is folded one code
// point at a time: `(?i)[Ā-￿]` is one instruction but about 1.6 ms to build (measured: 500 of
// them in a 2.5 KB pattern took 0.8 s), so each folded range costs its width / 64 on top. It
// matches RE2's count for ordinary patterns, is a little above it for alternations of
// single characters (which RE2 turns into one class), and only a few instructions below it for
// empty alternatives; parse errors are left to RE2. The walk is iterative: patterns are hostile.

/** What a Unicode property class costs to build, in instructions' worth. */
const PROPERTY_CLASS_COST = 64;
/** Code points of a case-folded class range that cost as much to build as one instruction. */
const FOLDED_CODE_POINTS_PER_INSTRUCTION = 64;
/** A flag group that turns on case folding: `(?i)`, `(?mi)`, `(?i:...)`, `(?s-i)` too (over-counted). */
const CASE_FOLDING = /\(\?[a-zA-Z-]*i[a-zA-Z-]*[:)]/;

interface Frame {
  capturing: boolean;
  /** Finished alternatives of this group, and how many. */
  done: number;
  branches: number;
  /** The current alternative, without its last item; the last item (a quantifier applies to it). */
  branch: number;
  last: number;
}

const frame = (capturing: boolean): Frame => ({ capturing, done: 0, branches: 0, branch: 0, last: 0 });

/** Closes a frame: its alternatives, their joins, and its capture instructions. */
function size(f: Frame): number {
  const total = f.done + f.branch + f.last;
  return total + f.branches + (f.capturing ? 2 : 0);
}

/** Where a `{n}`, `{n,}` or `{n,m}` at `i` ends, with its counts; undefined when it is a literal `{`. */
function repeatAt(p: string, i: number): { end: number; min: number; max: number | undefined } | undefined {
  const m = /^\{(\d{1,6})(,(\d{0,6}))?\}/.exec(p.slice(i, i + 16));
  if (!m) return undefined;
  const min = Number(m[1]);
  const max = m[2] === undefined ? min : m[3] === '' ? undefined : Number(m[3]);
  return { end: i + m[0].length, min, max };
}

/** Index just past an escape at `i` (a backslash), and what building it costs beyond its one
 * instruction. */
function escapeAt(p: string, i: number): { end: number; build: number } {
  const c = p[i + 1];
  if (c === 'p' || c === 'P') {
    const close = p[i + 2] === '{' ? p.indexOf('}', i + 3) : -1;
    return { end: close === -1 ? i + 3 : close + 1, build: PROPERTY_CLASS_COST };
  }
  if (c === 'x' && p[i + 2] === '{') {
    const close = p.indexOf('}', i + 3);
    return { end: close === -1 ? p.length : close + 1, build: 0 };
  }
  return { end: i + 2, build: 0 };
}

/** The code point of a class member at `j` (a character or an escape naming one), and where it
 * ends; undefined for an escape that names a set (`\d`, `\pL`) or a POSIX class. */
function classMemberAt(p: string, j: number): { code: number; end: number } | undefined {
  if (p[j] !== '\\') {
    const code = p.codePointAt(j)!;
    return { code, end: j + (code > 0xffff ? 2 : 1) };
  }
  const c = p[j + 1];
  if (c === 'x') {
    const braced = /^\{([0-9a-fA-F]{1,8})\}/.exec(p.slice(j + 2, j + 12));
    if (braced) return { code: parseInt(braced[1]!, 16), end: j + 2 + braced[0].length };
    const two = /^[0-9a-fA-F]{2}/.exec(p.slice(j + 2, j + 4));
    if (two) return { code: parseInt(two[0], 16), end: j + 4 };
    return undefined;
  }
  if (c === undefined || /[dDwWsSpP]/.test(c)) return undefined;
  const code = p.codePointAt(j + 1)!;
  return { code, end: j + 1 + (code > 0xffff ? 2 : 1) };
}

/** How much of the range low..high folding walks: every code point of the Basic Multilingual
 * Plane, and a 32nd of the rest (few characters beyond it have cases; measured: (?i) over
 * U+0100-U+FFFF takes about 1.6 ms, over U+0100-U+10FFFF about 3 ms). */
function foldedWidth(low: number, high: number): number {
  if (high <= low) return 0;
  const bmp = Math.max(0, Math.min(high, 0xffff) - low);
  const astral = Math.max(0, high - Math.max(low, 0x10000));
  return bmp + Math.floor(astral / 32);
}

/** Index just past a class `[...]` starting at `i`, and what building it costs (`folded`: case
 * folding is on, so ranges cost their width). */
function classAt(p: string, i: number, folded: boolean): { end: number; build: number } {
  let j = i + 1;
  if (p[j] === '^') j++;
  if (p[j] === ']') j++; // a leading ] is a literal
  let build = 0;
  let width = 0;
  while (j < p.length && p[j] !== ']') {
    if (p[j] === '[' && p[j + 1] === ':') {
      const close = p.indexOf(':]', j + 2);
      j = close === -1 ? j + 1 : close + 2;
      continue;
    }
    const low = classMemberAt(p, j);
    if (!low) {
      const e = escapeAt(p, j);
      build += e.build;
      j = e.end;
      continue;
    }
    j = low.end;
    if (p[j] === '-' && j + 1 < p.length && p[j + 1] !== ']') {
      const high = classMemberAt(p, j + 1);
      if (high) {
        width += foldedWidth(low.code, high.code);
        j = high.end;
      }
    }
  }
  if (folded) build += Math.floor(width / FOLDED_CODE_POINTS_PER_INSTRUCTION);
  return { end: j + 1, build };
}

/** An estimate of the instructions RE2 would compile `pattern` into (see the header). */
export function estimateRegexProgram(pattern: string): number {
  const p = pattern;
  const folded = CASE_FOLDING.test(p);
  const stack: Frame[] = [frame(false)];
  let top = stack[0]!;
  let build = 0;
  const atom = (cost: number) => {
    top.branch += top.last;
    top.last = cost;
  };
  let i = 0;
  while (i < p.length) {
    const c = p[i]!;
    if (c === '\\') {
      if (p[i + 1] === 'Q') {
        // Quoted literal text up to \E.
        const close = p.indexOf('\\E', i + 2);
        const end = close === -1 ? p.length : close;
        for (let k = i + 2; k < end; k++) atom(1);
        i = close === -1 ? p.length : close + 2;
        continue;
      }
      const e = escapeAt(p, i);
      atom(1);
      build += e.build;
      i = e.end;
    } else if (c === '[') {
      const k = classAt(p, i, folded);
      atom(1);
      build += k.build;
      i = k.end;
    } else if (c === '(') {
      let capturing = true;
      let j = i + 1;
      if (p[j] === '?') {
        const named = /^\?P?<[^>]*>/.exec(p.slice(j, j + 256));
        if (named) j += named[0].length;
        else {
          // (?flags) sets flags and is no group; (?flags:...) and (?:...) do not capture.
          const flags = /^\?[a-zA-Z-]*([:)])/.exec(p.slice(j, j + 32));
          if (flags && flags[1] === ')') {
            i = j + flags[0].length;
            continue;
          }
          capturing = false;
          j += flags ? flags[0].length : 1;
        }
      }
      top = frame(capturing);
      stack.push(top);
      i = j;
    } else if (c === ')') {
      if (stack.length > 1) {
        const inner = size(stack.pop()!);
        top = stack[stack.length - 1]!;
        atom(inner);
      }
      i++;
    } else if (c === '|') {
      top.done += top.branch + top.last;
      top.branches++;
      top.branch = 0;
      top.last = 0;
      i++;
    } else if (c === '*' || c === '+' || c === '?') {
      top.last += 1;
      i += p[i + 1] === '?' ? 2 : 1;
    } else if (c === '{') {
      const r = repeatAt(p, i);
      if (!r) {
        atom(1);
        i++;
        continue;
      }
      const copies = Math.max(r.max ?? r.min, 1);
      top.last = top.last * copies + (r.max === undefined ? 1 : r.max - r.min);
      i = r.end + (p[r.end] === '?' ? 1 : 0);
    } else {
      // A character (a surrogate pair counts as two, which only overestimates), ., ^ or $.
      atom(1);
      i++;
    }
  }
  // Unclosed groups are RE2's parse error; fold them so the estimate still covers the text.
  while (stack.length > 1) {
    const inner = size(stack.pop()!);
    top = stack[stack.length - 1]!;
    atom(inner);
  }
  return size(stack[0]!) + 2 + build;
}
