// Parsing PostHog property filters from a query parameter: bounded (depth, number of filters),
// refusing what cannot be evaluated, and every value bound as a parameter (never SQL text).
import { ValidationError } from '@sett/http';
import { parsePropertyFilters, propertyFilterSql } from '../src/filters/property-filter-sql';

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
    [{ key: 'a', value: '(a)\\1', operator: 'regex' }],
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
  expect(params).toEqual(expect.arrayContaining(["x'); DROP TABLE events; --", "'; --", 'n', 3, 'b']));
});
