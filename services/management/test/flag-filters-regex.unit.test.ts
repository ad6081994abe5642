// Flag filters with regular expressions decide cannot run (RE2 syntax: no lookarounds, no
// backreferences) are refused when the flag is saved: 400, attr `filters`, naming the property.
import { ValidationError } from '@sett/http';
import type { FlagFilters } from '@sett/flags';
import { checkFlagFilters } from '../src/feature-flags/flag-filters';

const withPattern = (operator: string, value: unknown, where: 'groups' | 'super_groups' = 'groups') =>
  ({
    [where]: [{ properties: [{ key: 'email', type: 'person', operator, value }], rollout_percentage: 100 }],
  }) as FlagFilters;

function refusal(filters: FlagFilters): ValidationError {
  try {
    checkFlagFilters(filters, new Set());
  } catch (err) {
    return err as ValidationError;
  }
  throw new Error('accepted');
}

test.each(['(?=x)a', '(?!x)a', '(?<=x)a', '(?<!x)a', '(a)\\1', '([a-z', 'a{2000}'])(
  'refuses %s with 400 naming the filter',
  (pattern) => {
    for (const operator of ['regex', 'not_regex']) {
      const err = refusal(withPattern(operator, pattern));
      expect(err).toBeInstanceOf(ValidationError);
      expect(err.status).toBe(400);
      expect(err.attr).toBe('filters');
      expect(err.message).toContain('"email"');
      expect(err.message).toContain('RE2');
    }
    expect(refusal(withPattern('regex', pattern, 'super_groups')).attr).toBe('filters');
  },
);

test('accepts patterns RE2 runs, including catastrophic-for-backtracking ones, and other operators', () => {
  for (const pattern of ['^(a+)+$', '(?i)@example\\.com$', '(?P<user>\\w+)@', '^\\d{3}-\\d{4}$'])
    expect(() => checkFlagFilters(withPattern('regex', pattern), new Set())).not.toThrow();
  // Not a regex operator: the text is never compiled.
  expect(() => checkFlagFilters(withPattern('exact', '(?=x)'), new Set())).not.toThrow();
  expect(() => checkFlagFilters(withPattern('regex', null), new Set())).not.toThrow();
});

test('refuses a 749 KB regex, and string values over the size limit, naming the property', () => {
  const err = refusal(withPattern('regex', 'abcdefghij'.repeat(76_700)));
  expect(err.status).toBe(400);
  expect(err.attr).toBe('filters');
  expect(err.message).toContain('"email"');
  expect(err.message).toMatch(/4096 characters/);
  for (const value of ['v'.repeat(65_537), ['ok', 'v'.repeat(65_537)]]) {
    const tooLong = refusal(withPattern('exact', value));
    expect(tooLong.status).toBe(400);
    expect(tooLong.attr).toBe('filters');
    expect(tooLong.message).toContain('"email"');
    expect(tooLong.message).toMatch(/65536 characters/);
  }
  expect(() => checkFlagFilters(withPattern('exact', 'v'.repeat(65_536)), new Set())).not.toThrow();
});
