import {
  cleanJson,
  dropProtoKeys,
  exceedsDepth,
  findJsonProblem,
  MAX_JSON_DEPTH,
  unstorableReason,
} from '../src';

const nested = (depth: number, leaf: unknown = 1): unknown => {
  let v: unknown = leaf;
  for (let i = 0; i < depth; i++) v = [v];
  return v;
};

describe('json safety', () => {
  it('measures depth without recursion, even 200k deep', () => {
    expect(exceedsDepth(nested(200_000))).toBe(true);
    expect(exceedsDepth(nested(MAX_JSON_DEPTH))).toBe(false);
    expect(exceedsDepth(nested(MAX_JSON_DEPTH + 1))).toBe(true);
    expect(exceedsDepth({ a: { b: 1 } }, 2)).toBe(false);
    expect(exceedsDepth({ a: { b: {} } }, 2)).toBe(true);
    expect(exceedsDepth('x')).toBe(false);
  });

  it('finds the deep branch among wide and mixed siblings, with memory bounded by the depth', () => {
    const deepLast = {
      a: [1, 'x', null, {}],
      b: Array.from({ length: 1000 }, () => ({ c: [] })),
      z: nested(10, {}),
    };
    expect(exceedsDepth(deepLast, 12)).toBe(false);
    expect(exceedsDepth(deepLast, 11)).toBe(true);
    expect(exceedsDepth([[], [[]], {}], 3)).toBe(false);
    expect(exceedsDepth([[], [[{}]], {}], 3)).toBe(true);
    expect(exceedsDepth({}, 0)).toBe(true);
    expect(exceedsDepth({}, 1)).toBe(false);
    // A million siblings: a walk that stacked every child first would allocate per sibling.
    expect(exceedsDepth({ wide: Array.from({ length: 1_000_000 }, () => []) })).toBe(false);
  });

  it('names the first unstorable key or value by its path', () => {
    expect(findJsonProblem({ a: ['ok', 'b\u0000'] }, 'body')).toEqual({ path: 'body.a[1]', reason: 'nul' });
    expect(findJsonProblem({ 'we ird\u0000': 1 })).toEqual({ path: '["we ird\ufffd"]', reason: 'nul' });
    expect(findJsonProblem({ s: 'x\ud800' })).toEqual({ path: 's', reason: 'lone_surrogate' });
    expect(findJsonProblem({ s: '\ud83d\ude00' })).toBeNull();
    expect(findJsonProblem(nested(100_000), 'v')?.reason).toBe('too_deep');
    expect(findJsonProblem({ a: 1, b: [true, null, 'x'] })).toBeNull();
  });

  it('cleans NUL and lone surrogates to U+FFFD in keys and values, leaving the input alone', () => {
    const input = { 'k\u0000': ['a\u0000b', { x: '\udc00y', ok: '\ud83d\ude00' }], n: 5 };
    const out = cleanJson(input);
    expect(out).toEqual({ 'k\ufffd': ['a\ufffdb', { x: '\ufffdy', ok: '\ud83d\ude00' }], n: 5 });
    expect(input['k\u0000'][0]).toBe('a\u0000b');
    expect(unstorableReason(JSON.stringify(out))).toBeNull();
  });

  it('cleans a deeply nested value without overflowing the stack', () => {
    const out = cleanJson(nested(50_000, '\u0000')) as unknown[];
    let v: unknown = out;
    while (Array.isArray(v)) v = v[0];
    expect(v).toBe('\ufffd');
  });
});

describe('dropProtoKeys', () => {
  it('removes every own __proto__ key, at any depth and inside arrays, and nothing else', () => {
    const value = JSON.parse(
      '{"a":1,"__proto__":{"x":1},"n":{"__proto__":2,"constructor":3},"arr":[{"__proto__":4,"b":5}]}',
    ) as Record<string, unknown>;
    expect(dropProtoKeys(value)).toBe(3);
    expect(value).toEqual({ a: 1, n: { constructor: 3 }, arr: [{ b: 5 }] });
    expect(Object.getPrototypeOf(value)).toBe(Object.prototype);
  });

  it('walks deep values without recursion', () => {
    let deep: unknown = JSON.parse('{"__proto__":1}');
    for (let i = 0; i < 100_000; i++) deep = [deep];
    expect(dropProtoKeys(deep)).toBe(1);
  });
});
