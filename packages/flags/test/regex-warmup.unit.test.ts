// Compiling a flag's or project's new patterns one per turn of the event loop: which values are
// patterns, and that other work runs between compiles.
import { randomUUID } from 'node:crypto';
import {
  cohortTreeRegexPatterns,
  compileRegexesInTurns,
  flagRegexPatterns,
  projectRegexPatterns,
  type FlagFilters,
} from '../src';
import { isRegexCompiled } from '../src/property-match';

const cond = (operator: string, value: unknown) => ({ key: 'k', type: 'person', operator, value });

describe('collecting patterns', () => {
  it('takes regex and not_regex values of conditions and super conditions, nothing else', () => {
    const filters = {
      groups: [
        {
          properties: [cond('regex', 'a+'), cond('exact', 'b'), cond('not_regex', 'c$'), cond('regex', null)],
        },
      ],
      super_groups: [{ properties: [cond('regex', '^d')] }],
    } as FlagFilters;
    expect(flagRegexPatterns(filters)).toEqual(['a+', 'c$', '^d']);
    expect(flagRegexPatterns(undefined)).toEqual([]);
  });

  it('walks cohort trees without recursion, and projects through both', () => {
    let tree: unknown = { type: 'AND', values: [cond('regex', 'deep')] };
    for (let i = 0; i < 50_000; i++) tree = { type: 'OR', values: [tree] };
    expect(cohortTreeRegexPatterns(tree)).toEqual(['deep']);
    const cohort = {
      id: 1,
      is_static: false,
      filters: { properties: { type: 'AND', values: [cond('regex', 'x')] } },
    };
    const flag = { filters: { groups: [{ properties: [cond('regex', 'y')] }] } as FlagFilters };
    expect(projectRegexPatterns([flag], [cohort])).toEqual(['y', 'x']);
  });
});

describe('compileRegexesInTurns', () => {
  it('compiles one new pattern per turn, so other work runs between them', async () => {
    const patterns = [1, 2, 3].map((i) => `^${randomUUID()}-${i}[a-z]{2,9}$`);
    const seen: number[] = [];
    const count = () => patterns.filter(isRegexCompiled).length;
    const ticker = setInterval(() => seen.push(count()), 0);
    const done = compileRegexesInTurns(patterns);
    expect(count()).toBe(1); // the first at once, synchronously
    await done;
    clearInterval(ticker);
    expect(count()).toBe(3);
    // Timers ran while patterns were still being compiled.
    expect(seen.some((n) => n < 3)).toBe(true);
  });

  it('resolves without yielding when every pattern is known, and skips over-long ones', async () => {
    const known = `^${randomUUID()}$`;
    await compileRegexesInTurns([known]);
    let turned = false;
    setImmediate(() => (turned = true));
    await compileRegexesInTurns([known, 'x'.repeat(10_000)]);
    expect(turned).toBe(false);
  });
});
