// Parsing PostHog property filters from a query parameter: bounded (depth, number of filters),
// refusing what cannot be evaluated, and every value bound as a parameter (never SQL text).
import { createRegexChecker } from '@sett/flags';
import { ValidationError } from '@sett/http';
import { parsePropertyFilters, propertyFilterSql, readPropertyFilters } from '../src/property-filters';

const parse = (value: unknown) =>
  parsePropertyFilters(JSON.stringify(value), 'properties', ['event', 'person']);

test('bounds the depth and the number of filters', () => {
  let deep: object = { key: 'a', value: 1 };
  for (let i = 0; i < 5; i++) deep = { type: 'AND', values: [deep] };
  expect(() => parse(deep)).toThrow(/deeper than 4/);
  expect(() => parse(Array.from({ length: 51 }, () => ({ key: 'a', value: 1 })))).toThrow(/at most 50/);
  expect(() => parse(Array.from({ length: 50 }, () => ({ key: 'a', value: 1 })))).not.toThrow();
});

test('refuses filters that cannot be evaluated, naming the parameter', () => {
  for (const bad of [
    { key: 'a' },
    [{ value: 1 }],
    [{ key: 'a', value: { nested: 1 } }],
    [{ key: 'a', value: 1, operator: 'between' }],
    [{ key: 'a', value: 1, type: 'element' }],
    [{ key: 'a', value: 'soon', operator: 'is_date_before' }],
    [{ key: 'a', value: '2024-02-30', operator: 'is_date_after' }],
    [{ key: 'a', value: '0000-01-01', operator: 'is_date_exact' }],
  ]) {
    const err = (() => {
      try {
        parse(bad);
      } catch (e) {
        return e;
      }
    })();
    expect(err).toBeInstanceOf(ValidationError);
    expect((err as ValidationError).attr).toBe('properties');
  }
});

test('binds keys and values as parameters', () => {
  const params: unknown[] = [];
  const sql = propertyFilterSql(
    parse([
      { key: "x'); DROP TABLE events; --", value: "'; --", operator: 'icontains' },
      {
        type: 'OR',
        values: [
          { key: 'n', value: 3, operator: 'lt' },
          { key: 'b', operator: 'is_set', type: 'person' },
        ],
      },
    ]),
    { event: 'properties', person: 'person_props' },
    (v) => `$${params.push(v)}`,
  );
  expect(sql).not.toContain('DROP');
  expect(sql).toContain('person_props');
  expect(params).toEqual(expect.arrayContaining(["x'); DROP TABLE events; --", "'; --", 'n', '3', 'b']));
});

test('binds only the parameters its SQL uses (an unused one is a statement Postgres refuses)', () => {
  for (const filter of [
    { key: 'd', value: '-7d', operator: 'is_date_before' },
    { key: 'n', value: 'abc', operator: 'gt' },
    { key: 'n', value: 5, operator: 'lte' },
    { key: 's', operator: 'is_set' },
    { key: 'r', value: '^a', operator: 'not_regex' },
  ]) {
    const params: unknown[] = [];
    const sql = propertyFilterSql(
      parse([filter]),
      { event: 'e.properties', person: 'p' },
      (v) => `$${params.push(v)}`,
    );
    for (let i = 1; i <= params.length; i++) expect([filter, sql.includes(`$${i}`)]).toEqual([filter, true]);
    expect(sql).not.toMatch(/CASE\s+ELSE/);
  }
});

describe('regular expressions, settled per request', () => {
  const regexes = createRegexChecker();
  afterAll(() => regexes.close());
  const read = (filters: unknown) =>
    readPropertyFilters(JSON.stringify(filters), 'properties', ['event'], regexes);

  test('refuses a pattern that is not RE2 (a backreference), naming the parameter and key', async () => {
    await expect(read([{ key: 'email', value: '(a)\\1', operator: 'regex' }])).rejects.toMatchObject({
      status: 400,
      attr: 'properties',
      message: expect.stringContaining('email'),
    });
  });

  test('refuses a set of new patterns over the budget before compiling any', async () => {
    // Each case-folded class over the Basic Multilingual Plane is ~1.6 ms to build: 30 of them
    // in 8 patterns are each under the limit of one pattern, but not together.
    const patterns = Array.from({ length: 8 }, (_, i) => `(?i)x${i}${Date.now()}${'[Ā-￿]'.repeat(7)}`);
    const started = Date.now();
    await expect(
      read(patterns.map((value) => ({ key: 'k', value, operator: 'regex' }))),
    ).rejects.toMatchObject({
      status: 400,
      message: expect.stringContaining('too long to compile together'),
    });
    expect(regexes.offLoopCompiles).toBe(0);
    expect(Date.now() - started).toBeLessThan(1000);
    // One of them alone is within the budget: compiled in the worker thread, then accepted.
    await expect(read([{ key: 'k', value: patterns[0], operator: 'regex' }])).resolves.toBeDefined();
    expect(regexes.offLoopCompiles).toBe(1);
  });
});
