// fast-check arbitraries for hostile JSON: strings rich in NUL, lone surrogates, quotes and
// backslashes; JSON trees with such keys and values; deep nests built without recursion.
import fc from 'fast-check';

const oddUnit = fc.oneof(
  {
    weight: 3,
    arbitrary: fc.constantFrom(
      '\u0000',
      '\ud800',
      '\udc00',
      '\udbff',
      '\udfff',
      '\ufffd',
      '\\',
      '"',
      '$',
      '.',
      '/',
    ),
  },
  { weight: 2, arbitrary: fc.integer({ min: 0, max: 0xffff }).map((n) => String.fromCharCode(n)) },
  { weight: 2, arbitrary: fc.constantFrom('a', 'b', ' ', '0', '😀', 'é') },
);

export const oddString = fc.string({ unit: oddUnit, maxLength: 24 });

export const oddKey = fc.oneof(
  oddString,
  fc.constantFrom('__proto__', 'constructor', 'prototype', 'toString', '$set', '$ip', ''),
);

/** JSON values whose strings and keys are odd, plus numbers at the edges. */
export const oddJson: fc.Arbitrary<unknown> = fc.letrec<{ value: unknown }>((tie) => ({
  value: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    oddString,
    fc.constantFrom(null, true, false, 0, -0, 2 ** 31, 2 ** 53 + 2, -(2 ** 63), 1e308, Number.MIN_VALUE),
    fc.double({ noNaN: true, noDefaultInfinity: true }),
    fc.array(tie('value'), { maxLength: 5 }),
    fc.dictionary(oddKey, tie('value'), { maxKeys: 5 }),
  ),
})).value;

/** A value nested `depth` levels (arrays or objects) around `leaf`, built iteratively. */
export function nest(depth: number, leaf: unknown, shape: 'array' | 'object'): unknown {
  let v = leaf;
  for (let i = 0; i < depth; i++) v = shape === 'array' ? [v] : { a: v };
  return v;
}

export const deepJson = fc
  .record({
    // Deeper nests go in as JSON text (see the 100k-deep tests): JSON.stringify and fast-check's own
    // value printing recurse, so values this deep are as far as a generated object can go.
    depth: fc.integer({ min: 1, max: 1500 }),
    leaf: oddString,
    shape: fc.constantFrom('array' as const, 'object' as const),
  })
  .map(({ depth, leaf, shape }) => nest(depth, leaf, shape));

// JSON.stringify escapes NUL as \u0000 and a lone surrogate as \udXXX (a well-formed pair is
// written as is), so these find what Postgres' text and jsonb would refuse. The lookbehind
// skips an escaped backslash followed by a literal "u0000".
const ESCAPED_NUL = /(?<!\\)(?:\\\\)*\\u0000/;
const ESCAPED_SURROGATE = /(?<!\\)(?:\\\\)*\\ud[89a-f][0-9a-f]{2}/i;

/** Why a JSON text cannot go into Postgres jsonb, or undefined. */
export function unstorableJson(json: string): string | undefined {
  if (ESCAPED_NUL.test(json)) return 'contains \\u0000';
  if (ESCAPED_SURROGATE.test(json)) return 'contains a lone surrogate';
  return undefined;
}

/** Why a string cannot go into Postgres text, or undefined. */
export function unstorableText(s: string): string | undefined {
  return unstorableJson(JSON.stringify(s));
}
