// Pure parts of cohorts: the CSV reader, the filter tree walk (bounds, leaf checks), reference
// cycles, the flag reference checks, and the OpenAPI document using the validated schemas.
import { ValidationError } from '@sett/http';
import type { FlagFilters } from '@sett/flags';
import {
  MAX_COHORT_GROUP_DEPTH,
  behaviouralDependency,
  checkCohortFilters,
  hasCycle,
} from '../src/cohorts/cohort-filters';
import { csvRecords, distinctIdsFromCsv } from '../src/cohorts/cohort-csv';
import { checkFlagReferences } from '../src/feature-flags/flag-filters';

const csv = (text: string) => distinctIdsFromCsv(Buffer.from(text));
const problem = (fn: () => unknown) => {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(ValidationError);
    return err as ValidationError;
  }
  throw new Error('expected a ValidationError');
};

describe('CSV', () => {
  test('records: quotes, escaped quotes, CRLF, line breaks inside quotes keep line numbers right', () => {
    const records = [...csvRecords('a,"b,c"\r\n"x""y","multi\nline"\nlast')];
    expect(records).toEqual([
      { line: 1, fields: ['a', 'b,c'] },
      { line: 2, fields: ['x"y', 'multi\nline'] },
      { line: 4, fields: ['last'] },
    ]);
    expect(problem(() => csv('a\n"open\n')).message).toMatch(/^Line 2:/);
  });
  test('formats as PostHog reads them', () => {
    expect(csv('\ufeffdistinct_id\r\n a \r\nb\r\na\r\n\r\n')).toEqual(['a', 'b']);
    expect(csv('first\nsecond')).toEqual(['first', 'second']);
    expect(csv('name,Distinct-ID\nx,1\ny\nz,2\n')).toEqual(['1', '2']);
    expect(problem(() => csv('name,email\nx,y\n')).attr).toBe('csv');
    expect(problem(() => csv('person_id\n0190\n')).attr).toBe('csv');
    expect(problem(() => csv('\n\n')).message).toMatch(/empty/);
    expect(problem(() => csv('distinct_id\n\n')).message).toMatch(/no distinct ids/);
    expect(problem(() => distinctIdsFromCsv(Buffer.from([0x61, 0xff, 0x0a]))).message).toMatch(/UTF-8/);
    expect(problem(() => csv(`ok\n${'x'.repeat(401)}`)).message).toMatch(/^Line 2:/);
  });
});

describe('filter tree', () => {
  const leaf = { key: 'a', type: 'person', value: 'b', operator: 'exact' };
  test('summary: cohort ids normalised to integers, behavioural noticed', () => {
    const filters = {
      properties: {
        type: 'OR',
        values: [
          { type: 'AND', values: [leaf, { key: 'id', type: 'cohort', value: '12' }] },
          { type: 'behavioral', key: '$pageview', value: 'performed_event', event_type: 'events' },
        ],
      },
    };
    const s = checkCohortFilters(filters);
    expect([...s.cohortIds]).toEqual([12]);
    expect(s.behavioral).toBe(true);
    expect(s.leaves).toBe(3);
    expect((filters.properties.values[0] as { values: Array<{ value: unknown }> }).values[1]!.value).toBe(12);
  });
  test('depth is bounded without recursion', () => {
    let node: object = leaf;
    for (let i = 0; i < MAX_COHORT_GROUP_DEPTH + 1; i++) node = { type: 'AND', values: [node] };
    expect(problem(() => checkCohortFilters({ properties: node })).attr).toBe('filters');
  });
  test('regex and other values are bounded in size, naming the condition', () => {
    const tree = (value: unknown, operator: string) => ({
      properties: { type: 'AND', values: [{ ...leaf, operator, value }] },
    });
    const huge = problem(() => checkCohortFilters(tree('abcdefghij'.repeat(76_700), 'regex')));
    expect(huge.attr).toBe('filters');
    expect(huge.message).toMatch(/properties\.values\[0\].*longer than 4096 characters/);
    expect(problem(() => checkCohortFilters(tree('.{999}'.repeat(5), 'not_regex'))).message).toMatch(
      /too large/,
    );
    expect(problem(() => checkCohortFilters(tree(['x', 'v'.repeat(70_000)], 'exact'))).message).toMatch(
      /longer than 65536 characters/,
    );
    expect(checkCohortFilters(tree('v'.repeat(65_536), 'icontains')).leaves).toBe(1);
  });
});

test('hasCycle and behaviouralDependency stop at static cohorts', () => {
  const refs = new Map([
    [1, [2]],
    [2, [3]],
    [3, [1]],
    [4, [2]],
  ]);
  expect(hasCycle(1, (n) => refs.get(n) ?? [])).toBe(true);
  expect(hasCycle(4, (n) => (n === 3 ? [] : (refs.get(n) ?? [])))).toBe(false);
  const beh = {
    properties: { type: 'AND', values: [{ type: 'behavioral', key: 'x', value: 'performed_event' }] },
  };
  const ref = (id: number) => ({
    properties: { type: 'AND', values: [{ type: 'cohort', key: 'id', value: id }] },
  });
  const cohorts = new Map([
    [1, { id: 1, name: 'events', isStatic: false, filters: beh }],
    [2, { id: 2, name: 'static', isStatic: true, filters: ref(1) }],
    [3, { id: 3, name: 'via', isStatic: false, filters: ref(1) }],
  ]);
  expect(behaviouralDependency([2], cohorts)).toBeUndefined();
  expect(behaviouralDependency([3], cohorts)?.id).toBe(1);
});

test('flag references: missing, values, cycles through several hops', () => {
  const dep = (key: string, value: unknown = true) => ({
    groups: [{ properties: [{ key, type: 'flag', value }] }],
  });
  const flags = [
    { id: 1, key: 'a', filters: dep('2') as FlagFilters },
    { id: 2, key: 'b', filters: dep('c', 'v') as FlagFilters },
    { id: 3, key: 'c', filters: {} as FlagFilters },
  ];
  const project = { cohorts: new Map(), flags };
  expect(() => checkFlagReferences(dep('a') as FlagFilters, project)).not.toThrow();
  expect(problem(() => checkFlagReferences(dep('zz') as FlagFilters, project)).attr).toBe('filters');
  expect(problem(() => checkFlagReferences(dep('a', 1) as FlagFilters, project)).attr).toBe('filters');
  expect(problem(() => checkFlagReferences(dep('1') as FlagFilters, { ...project, flagId: 3 })).code).toBe(
    'circular_dependency',
  );
  expect(problem(() => checkFlagReferences(dep('c') as FlagFilters, { ...project, flagId: 3 })).code).toBe(
    'circular_dependency',
  );
  const cohortRef = { groups: [{ properties: [{ key: 'id', type: 'cohort', value: 5 }] }] } as FlagFilters;
  expect(problem(() => checkFlagReferences(cohortRef, project)).message).toMatch(/does not exist/);
});
