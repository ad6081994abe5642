// The bucketing hash and variant table against an independent BigInt computation and against
// PostHog's cross-library consistency vectors.
import { createHash } from 'crypto';
import { evaluateFlag, flagHash, matchingVariant, variantForHash, variantLookupTable } from '../src';
import { ctx, flag } from './helpers';

// Independent model of PostHog's hash: exact 60-bit integer from the first 15 hex digits, then
// Python's `hash_val / float(0xFFFFFFFFFFFFFFF)` (int converted to the nearest double, divided
// by the double nearest 2^60 - 1).
function referenceHash(key: string, id: string, salt = ''): number {
  const hex = createHash('sha1').update(`${key}.${id}${salt}`).digest('hex').slice(0, 15);
  return Number(BigInt(`0x${hex}`)) / Number(0xfffffffffffffffn);
}

const ids = (n: number, prefix = 'user_'): string[] => Array.from({ length: n }, (_, i) => `${prefix}${i}`);

describe('flagHash', () => {
  it('equals the BigInt reference for many ids, keys and salts', () => {
    const cases: [string, string, string][] = [];
    for (const id of [...ids(2000), 'é-ünïcødé', '', '🙂', 'a.b.c', '12345']) {
      for (const key of ['beta-feature', 'simple-flag', 'ключ']) {
        for (const salt of ['', 'variant']) cases.push([key, id, salt]);
      }
    }
    for (const [key, id, salt] of cases) expect(flagHash(key, id, salt)).toBe(referenceHash(key, id, salt));
  });

  it('stays in [0, 1]', () => {
    for (const id of ids(5000)) {
      const h = flagHash('range', id);
      expect(h).toBeGreaterThanOrEqual(0);
      expect(h).toBeLessThanOrEqual(1);
    }
  });

  it('salts the variant hash independently of the rollout hash', () => {
    expect(flagHash('k', 'id')).not.toBe(flagHash('k', 'id', 'variant'));
  });
});

// PostHog's consistency vectors, the first 60 of the 1000 distinct ids `distinct_id_<i>`:
// posthog/test/test_feature_flag.py (test_simple_flag_consistency,
// test_multivariate_flag_consistency) in PostHog/posthog, copied verbatim into every SDK's tests
// (posthog-ruby spec "consistency tests", posthog-go feature flag tests, posthog-python
// test_feature_flags.py) to keep server and libraries in sync.
const SIMPLE_FLAG_45 = '011010010101101000110100101100011110000001101100011000010101'; // 1 = enabled
const MULTIVARIATE_55 = [
  'second',
  'second',
  'first',
  false,
  false,
  'second',
  'first',
  false,
  false,
  false,
  'first',
  'third',
  false,
  'first',
  'second',
  'first',
  false,
  false,
  'fourth',
  'first',
  false,
  'third',
  false,
  false,
  false,
  'first',
  'first',
  'first',
  'first',
  'first',
  'first',
  'third',
  false,
  'third',
  'second',
  'first',
  false,
  'third',
  false,
  false,
  'first',
  'second',
  false,
  'first',
  'first',
  'second',
  false,
  'first',
  false,
  false,
  'first',
  'first',
  'first',
  'second',
  'first',
  false,
  'second',
  'second',
  'third',
  'second',
  'first',
] as const;

describe('PostHog consistency vectors', () => {
  it('simple-flag at 45% enables the same distinct ids as PostHog', () => {
    const def = flag('simple-flag', { groups: [{ properties: [], rollout_percentage: 45 }] });
    const got = [...SIMPLE_FLAG_45].map((_, i) =>
      evaluateFlag(def, ctx(`distinct_id_${i}`)).enabled ? '1' : '0',
    );
    expect(got.join('')).toBe(SIMPLE_FLAG_45);
  });

  it('multivariate-flag at 55% with 50/20/20/5/5 variants gives the same variants as PostHog', () => {
    const def = flag('multivariate-flag', {
      groups: [{ properties: [], rollout_percentage: 55 }],
      multivariate: {
        variants: [
          { key: 'first-variant', rollout_percentage: 50 },
          { key: 'second-variant', rollout_percentage: 20 },
          { key: 'third-variant', rollout_percentage: 20 },
          { key: 'fourth-variant', rollout_percentage: 5 },
          { key: 'fifth-variant', rollout_percentage: 5 },
        ],
      },
    });
    MULTIVARIATE_55.forEach((want, i) => {
      const r = evaluateFlag(def, ctx(`distinct_id_${i}`));
      if (want === false) {
        expect(r.enabled).toBe(false);
        expect(r.variant).toBeUndefined();
      } else {
        expect(r.enabled).toBe(true);
        expect(r.variant).toBe(`${want}-variant`);
      }
    });
  });
});

describe('rollout and variant shares', () => {
  const population = ids(100_000, 'share_');

  it.each([10, 33, 50, 87.5])('%s%% rollout enables that share of 100k ids, within 1 point', (pct) => {
    const def = flag(`rollout-${pct}`, { groups: [{ rollout_percentage: pct }] });
    const enabled = population.filter((id) => evaluateFlag(def, ctx(id)).enabled).length;
    expect(Math.abs((enabled / population.length) * 100 - pct)).toBeLessThan(1);
  });

  it('rollout is inclusive: in when hash == pct/100, out just above', () => {
    // Find an id whose hash survives the round trip through a percentage exactly.
    const id = ids(1000, 'edge_').find(
      (candidate) => (flagHash('edge', candidate) * 100) / 100 === flagHash('edge', candidate),
    )!;
    const pct = flagHash('edge', id) * 100;
    expect(evaluateFlag(flag('edge', { groups: [{ rollout_percentage: pct }] }), ctx(id)).enabled).toBe(true);
    const justBelow = pct * (1 - 1e-12);
    const r = evaluateFlag(flag('edge', { groups: [{ rollout_percentage: justBelow }] }), ctx(id));
    expect(r.enabled).toBe(false);
    expect(r.reason.code).toBe('out_of_rollout_bound');
  });

  it('variants take their share of 100k ids, within 1 point', () => {
    const variants = [
      { key: 'a', rollout_percentage: 50 },
      { key: 'b', rollout_percentage: 30 },
      { key: 'c', rollout_percentage: 20 },
    ];
    const def = flag('split', { groups: [{ rollout_percentage: 100 }], multivariate: { variants } });
    const counts: Record<string, number> = { a: 0, b: 0, c: 0 };
    for (const id of population) counts[evaluateFlag(def, ctx(id)).variant!]! += 1;
    for (const v of variants) {
      expect(Math.abs((counts[v.key]! / population.length) * 100 - v.rollout_percentage)).toBeLessThan(1);
    }
  });

  it('picks the first variant whose [lower, upper) range holds the variant hash', () => {
    const variants = [
      { key: 'x', rollout_percentage: 25 },
      { key: 'y', rollout_percentage: 25 },
      { key: 'z', rollout_percentage: 50 },
    ];
    expect(variantLookupTable(variants)).toEqual([
      { key: 'x', lower: 0, upper: 0.25 },
      { key: 'y', lower: 0.25, upper: 0.5 },
      { key: 'z', lower: 0.5, upper: 1 },
    ]);
    for (const id of ids(3000)) {
      const h = referenceHash('ranges', id, 'variant');
      const want = h < 0.25 ? 'x' : h < 0.5 ? 'y' : 'z';
      expect(matchingVariant('ranges', id, variants)).toBe(want);
    }
  });

  it('puts a hash on a range edge in the upper variant', () => {
    const variants = [
      { key: 'x', rollout_percentage: 25 },
      { key: 'y', rollout_percentage: 75 },
    ];
    expect(variantForHash(0, variants)).toBe('x');
    expect(variantForHash(0.25, variants)).toBe('y');
    expect(variantForHash(0.2499999, variants)).toBe('x');
    expect(variantForHash(1, variants)).toBeUndefined();
  });

  it('returns no variant when the percentages leave the hash uncovered', () => {
    const variants = [{ key: 'only', rollout_percentage: 10 }];
    for (const id of ids(500)) {
      const h = referenceHash('gap', id, 'variant');
      expect(matchingVariant('gap', id, variants)).toBe(h < 0.1 ? 'only' : undefined);
    }
  });
});
