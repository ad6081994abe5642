// Every supported operator, with PostHog's server-side semantics for absent properties.
import { FlagEvaluationError, matchProperty, regexProblem, type PropertyFilter } from '../src';

const NOW = new Date('2024-03-31T12:00:00.000Z');
const match = (filter: PropertyFilter, props: Record<string, unknown>): boolean =>
  matchProperty(filter, props, NOW);
const f = (operator: string | undefined, value: unknown, key = 'k'): PropertyFilter => ({
  key,
  operator,
  value,
  type: 'person',
});

describe('exact / is_not', () => {
  it('compares text case-insensitively; the default operator is exact', () => {
    expect(match(f(undefined, 'Value'), { k: 'value' })).toBe(true);
    expect(match(f('exact', 'value'), { k: 'VALUE' })).toBe(true);
    expect(match(f('exact', 'value'), { k: 'value2' })).toBe(false);
    expect(match(f('exact', 'value'), { k: '' })).toBe(false);
    expect(match(f('exact', 'value'), { k: null })).toBe(false);
  });

  it('treats a list as any-of (exact) and none-of (is_not)', () => {
    const list = ['US', 'ca', 'Uk'];
    expect(match(f('exact', list), { k: 'us' })).toBe(true);
    expect(match(f('exact', list), { k: 'UK' })).toBe(true);
    expect(match(f('exact', list), { k: 'de' })).toBe(false);
    expect(match(f('exact', []), { k: 'us' })).toBe(false);
    expect(match(f('is_not', list), { k: 'de' })).toBe(true);
    expect(match(f('is_not', list), { k: 'CA' })).toBe(false);
  });

  it('compares numbers and booleans by their text, booleans by truthiness', () => {
    expect(match(f('exact', 5), { k: '5' })).toBe(true);
    expect(match(f('exact', '5'), { k: 5 })).toBe(true);
    expect(match(f('exact', ['1', '2']), { k: 2 })).toBe(true);
    expect(match(f('exact', true), { k: 'True' })).toBe(true);
    expect(match(f('exact', 'true'), { k: true })).toBe(true);
    expect(match(f('exact', ['true']), { k: true })).toBe(true);
    expect(match(f('exact', false), { k: 'false' })).toBe(true);
    expect(match(f('exact', false), { k: true })).toBe(false);
  });

  it('is_not matches an absent property; exact does not', () => {
    expect(match(f('exact', 'x'), {})).toBe(false);
    expect(match(f('is_not', 'x'), {})).toBe(true);
    expect(match(f('is_not', 'x'), { k: 'y' })).toBe(true);
    expect(match(f('is_not', 'x'), { k: 'X' })).toBe(false);
  });

  it('never matches without a filter value', () => {
    expect(match(f('exact', null), { k: 'a' })).toBe(false);
    expect(match(f('is_not', undefined), { k: 'a' })).toBe(false);
  });
});

describe('is_set / is_not_set', () => {
  it('checks key presence, a null value counting as set', () => {
    expect(match(f('is_set', 'is_set'), { k: 'a' })).toBe(true);
    expect(match(f('is_set', 'is_set'), { k: null })).toBe(true);
    expect(match(f('is_set', 'is_set'), {})).toBe(false);
    expect(match(f('is_not_set', 'is_not_set'), {})).toBe(true);
    expect(match(f('is_not_set', 'is_not_set'), { k: '' })).toBe(false);
  });

  it('does not read inherited keys as set', () => {
    expect(match(f('is_set', 'is_set', 'constructor'), {})).toBe(false);
  });
});

describe('icontains / not_icontains', () => {
  it('finds the value anywhere, ignoring case', () => {
    expect(match(f('icontains', 'valUe'), { k: '343tfVALUE5' })).toBe(true);
    expect(match(f('icontains', 'value'), { k: 'Alakazam' })).toBe(false);
    expect(match(f('icontains', '3'), { k: 323 })).toBe(true);
    expect(match(f('not_icontains', 'posthog'), { k: 'tim@PostHog.com' })).toBe(false);
    expect(match(f('not_icontains', 'posthog'), { k: 'tim@example.com' })).toBe(true);
  });

  it('absent: icontains false, not_icontains true', () => {
    expect(match(f('icontains', 'a'), {})).toBe(false);
    expect(match(f('not_icontains', 'a'), {})).toBe(true);
  });
});

describe('regex / not_regex', () => {
  it('searches (unanchored) the text of the value', () => {
    expect(match(f('regex', '\\.com$'), { k: 'a@b.com' })).toBe(true);
    expect(match(f('regex', '^b'), { k: 'a@b.com' })).toBe(false);
    expect(match(f('regex', '^\\d+$'), { k: 12345 })).toBe(true);
    expect(match(f('not_regex', '\\.com$'), { k: 'a@b.org' })).toBe(true);
    expect(match(f('not_regex', '\\.com$'), { k: 'a@b.com' })).toBe(false);
  });

  it('accepts the Python-style (?i) prefix and (?P<name>) groups PostHog filters use', () => {
    expect(match(f('regex', '(?i)^ADMIN'), { k: 'admin@x' })).toBe(true);
    expect(match(f('regex', '(?P<user>\\w+)@x'), { k: 'me@x' })).toBe(true);
  });

  it('absent: regex false, not_regex true', () => {
    expect(match(f('regex', 'a'), {})).toBe(false);
    expect(match(f('not_regex', 'a'), {})).toBe(true);
  });

  it('throws on an invalid pattern, even when the property is absent', () => {
    expect(() => match(f('regex', '(unclosed'), { k: 'x' })).toThrow(FlagEvaluationError);
    expect(() => match(f('not_regex', '[z-a]'), {})).toThrow(FlagEvaluationError);
  });

  // RE2 semantics: no backtracking, so a pattern that is catastrophic for a backtracking engine
  // (native RegExp needs about a second for 27 characters here, doubling per character) costs
  // time linear in the text. Whether it finished is the assertion; the timing is in
  // `pnpm bench flags`.
  it('runs catastrophic patterns in linear time (RE2, not backtracking)', () => {
    for (const n of [10_000, 100_000]) {
      const value = `${'a'.repeat(n)}!`;
      expect(match(f('regex', '^(a+)+$'), { k: value })).toBe(false);
      expect(match(f('not_regex', '^(a|aa)+$'), { k: value })).toBe(true);
      expect(match(f('regex', '^(a+)+$'), { k: 'a'.repeat(n) })).toBe(true);
      expect(match(f('regex', '(x+x+)+y'), { k: 'x'.repeat(n) })).toBe(false);
    }
  });

  it('refuses what RE2 cannot run: lookarounds, backreferences, possessive and huge repeats', () => {
    for (const pattern of ['(?=a)b', '(?!a)b', '(?<=a)b', '(?<!a)b', '(a)\\1', 'a++', 'a{1001}', '(?x) a']) {
      expect(regexProblem(pattern)).toMatch(/invalid regex/);
      expect(() => match(f('regex', pattern), { k: 'ab' })).toThrow(FlagEvaluationError);
    }
    for (const pattern of [
      '^a.*b$',
      '(?i)x',
      '(?P<n>a)',
      '(?<n>a)',
      '[[:alpha:]]+',
      '\\p{Greek}',
      '(?s)a.b',
    ]) {
      expect(regexProblem(pattern)).toBeUndefined();
    }
  });

  it('keeps a non-string pattern value as its JSON text, like PostHog', () => {
    expect(match(f('regex', 5), { k: 'v5' })).toBe(true);
    expect(regexProblem(['a'])).toBeUndefined();
  });
});

describe('gt / gte / lt / lte', () => {
  it('compares numerically when both sides are numbers or numeric strings', () => {
    expect(match(f('gt', 5), { k: 10 })).toBe(true);
    expect(match(f('gt', '9'), { k: '10' })).toBe(true); // text order would say "10" < "9"
    expect(match(f('gt', 10), { k: 10 })).toBe(false);
    expect(match(f('gte', 10), { k: '10' })).toBe(true);
    expect(match(f('lt', '1e3'), { k: 999.5 })).toBe(true);
    expect(match(f('lte', -1), { k: -1 })).toBe(true);
    expect(match(f('lt', 0), { k: 1 })).toBe(false);
  });

  it('falls back to text order when either side is not a number', () => {
    expect(match(f('gt', 'apple'), { k: 'banana' })).toBe(true);
    expect(match(f('lt', 'apple'), { k: 'banana' })).toBe(false);
    expect(match(f('gt', '10'), { k: '9abc' })).toBe(true); // "9abc" > "10" as text
    expect(match(f('lt', 5), { k: true })).toBe(false); // "true" < "5" is false as text
  });

  it('does not match an absent or null property', () => {
    expect(match(f('gt', 1), {})).toBe(false);
    expect(match(f('lt', 1), { k: null })).toBe(false);
  });
});

describe('is_date_before / is_date_after / is_date_exact', () => {
  it('compares absolute ISO dates and date-times', () => {
    expect(match(f('is_date_before', '2024-01-02'), { k: '2024-01-01' })).toBe(true);
    expect(match(f('is_date_before', '2024-01-01'), { k: '2024-01-01' })).toBe(false);
    expect(match(f('is_date_after', '2024-01-01T10:00:00Z'), { k: '2024-01-01T12:00:00+01:00' })).toBe(true);
    expect(match(f('is_date_after', '2024-01-01T10:00:00Z'), { k: '2024-01-01T12:00:00+03:00' })).toBe(false);
    expect(match(f('is_date_exact', '2024-01-01'), { k: '2024-01-01T00:00:00Z' })).toBe(true);
    expect(match(f('is_date_exact', '2024-01-01 08:30'), { k: '2024-01-01T08:30:00.000Z' })).toBe(true);
  });

  it('reads numeric property values as epoch seconds', () => {
    const t = Date.UTC(2024, 0, 1) / 1000;
    expect(match(f('is_date_exact', '2024-01-01'), { k: t })).toBe(true);
    expect(match(f('is_date_exact', '2024-01-01'), { k: String(t) })).toBe(true);
    expect(match(f('is_date_before', '2024-01-01'), { k: t - 1 })).toBe(true);
  });

  it('resolves relative dates against ctx.now; the sign is ignored as in PostHog', () => {
    // now = 2024-03-31T12:00Z
    expect(match(f('is_date_after', '-7d'), { k: '2024-03-25T00:00:00Z' })).toBe(true);
    expect(match(f('is_date_after', '-7d'), { k: '2024-03-24T11:59:59Z' })).toBe(false);
    expect(match(f('is_date_after', '7d'), { k: '2024-03-25T00:00:00Z' })).toBe(true);
    expect(match(f('is_date_before', '-1h'), { k: '2024-03-31T10:59:59Z' })).toBe(true);
    expect(match(f('is_date_before', '-1h'), { k: '2024-03-31T11:00:01Z' })).toBe(false);
    expect(match(f('is_date_exact', '-2w'), { k: '2024-03-17T12:00:00Z' })).toBe(true);
    expect(match(f('is_date_exact', '-1m'), { k: '2024-02-29T12:00:00Z' })).toBe(true); // day clamped
    expect(match(f('is_date_exact', '-1y'), { k: '2023-03-31T12:00:00Z' })).toBe(true);
  });

  it('does not match unparseable dates, absent properties or non-string filter values', () => {
    expect(match(f('is_date_before', 'not a date'), { k: '2024-01-01' })).toBe(false);
    expect(match(f('is_date_before', '2024-01-01'), { k: 'garbage' })).toBe(false);
    expect(match(f('is_date_before', '2024-02-30'), { k: '2020-01-01' })).toBe(false);
    expect(match(f('is_date_before', '2024-01-01'), {})).toBe(false);
    expect(match(f('is_date_before', 20240101), { k: '2020-01-01' })).toBe(false);
    expect(match(f('is_date_after', '-10000d'), { k: '2024-01-01' })).toBe(false);
  });
});

describe('unsupported filters', () => {
  it('throws for cohorts, flag dependencies and unknown operators', () => {
    expect(() => match({ key: 'id', value: 3, type: 'cohort' }, {})).toThrow(FlagEvaluationError);
    expect(() => match({ key: 'other-flag', value: true, type: 'flag' }, {})).toThrow(FlagEvaluationError);
    expect(() => match(f('semver_gt', '1.0.0'), { k: '2.0.0' })).toThrow(FlagEvaluationError);
  });
});

describe('regex cost bounds', () => {
  it('refuses a pattern over the length limit without compiling it (a 749 KB pattern)', () => {
    const huge = 'abcdefghij'.repeat(76_700);
    const started = process.hrtime.bigint();
    expect(regexProblem(huge)).toMatch(/longer than 4096 characters/);
    // Compiling it takes seconds; refusing it must not.
    expect(Number(process.hrtime.bigint() - started) / 1e6).toBeLessThan(50);
    expect(() => match(f('regex', huge), { k: 'x' })).toThrow(FlagEvaluationError);
  });

  it('refuses a short pattern whose program is too large, before compiling it', () => {
    // 30 characters that RE2 expands into about 5,000 instructions.
    const expanding = '.{999}.{999}.{999}.{999}.{999}';
    expect(regexProblem(expanding)).toMatch(/too large/);
    expect(regexProblem('(?:[a-z]{999}){1}'.repeat(6))).toMatch(/too large/);
  });

  it('accepts the largest patterns people write: long alternations and literals', () => {
    const domains = Array.from({ length: 150 }, (_, i) => `customer${i}\\.example\\.com`).join('|');
    expect(domains.length).toBeLessThanOrEqual(4096);
    expect(regexProblem(`@(${domains})$`)).toBeUndefined();
    expect(regexProblem('x'.repeat(4000))).toBeUndefined();
    expect(regexProblem('.{999}')).toBeUndefined();
    expect(regexProblem('^\\d{3}-\\d{4}$')).toBeUndefined();
  });
});
