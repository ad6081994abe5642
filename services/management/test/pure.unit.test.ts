// Pure parts: pagination envelope and cursor, flag filter checks, key slugs and bearer
// parsing (the OpenAPI document has its own test, openapi.unit.test.ts).
import { ValidationError, AuthenticationError } from '@sett/http';
import { parseBearer } from '../src/auth/auth-middleware';
import {
  checkFlagFilters,
  enrollmentSuperGroups,
  slugifyKey,
  uniqueKey,
  withoutEnrollment,
} from '../src/feature-flags/flag-filters';
import { decodeCursor, encodeCursor, envelope, linkOrigin, parsePage } from '../src/pagination/pagination';
import { stringifyPage } from '../src/users/user-page-json';

const info = { origin: 'https://h', path: '/api/x/', query: { limit: '2', is_staff: 'true' } };

test('parsePage defaults and clamps (the route schemas refuse the rest: users.int.test.ts)', () => {
  expect(parsePage({})).toEqual({ limit: 100, offset: 0 });
  expect(parsePage({ limit: 5000, offset: 3 })).toEqual({ limit: 1000, offset: 3 });
});

test('envelope next/previous', () => {
  expect(envelope(info, { limit: 2, offset: 0 }, 5, [1, 2])).toMatchObject({
    next: 'https://h/api/x/?limit=2&is_staff=true&offset=2',
    previous: null,
  });
  expect(envelope(info, { limit: 2, offset: 2 }, 5, [3, 4])).toMatchObject({
    previous: 'https://h/api/x/?limit=2&is_staff=true',
  });
  expect(envelope(info, { limit: 2, offset: 4 }, 5, [5])).toMatchObject({
    next: null,
    previous: 'https://h/api/x/?limit=2&is_staff=true&offset=2',
  });
  expect(envelope(info, { limit: 2, offset: 0 }, 0, [])).toEqual({
    count: 0,
    next: null,
    previous: null,
    results: [],
  });
});

test('link origin: the public URL without its trailing slash, else relative links', () => {
  expect(linkOrigin('https://pub/')).toBe('https://pub');
  expect(linkOrigin('https://pub/sett//')).toBe('https://pub/sett');
  expect(linkOrigin(undefined)).toBe('');
});

test('cursor round trip and rejection', () => {
  const c = { ts: '2026-01-01 00:00:07.123456+00', uuid: '0b8f0b8e-58f5-4b0e-9a55-0d0c3a7e0f11' };
  expect(decodeCursor(encodeCursor(c))).toEqual(c);
  expect(decodeCursor(undefined)).toBeUndefined();
  expect(() => decodeCursor('garbage')).toThrow(ValidationError);
  expect(() => decodeCursor(Buffer.from(JSON.stringify(["1'; drop", c.uuid])).toString('base64url'))).toThrow(
    ValidationError,
  );
});

test('flag filter checks', () => {
  const ok = (filters: object, indexes: number[] = []) => checkFlagFilters(filters, new Set(indexes));
  expect(() =>
    ok({
      multivariate: {
        variants: [
          { key: 'a', rollout_percentage: 50 },
          { key: 'b', rollout_percentage: 50 },
        ],
      },
      payloads: { a: '1' },
    }),
  ).not.toThrow();
  expect(() =>
    ok({
      multivariate: {
        variants: [
          { key: 'a', rollout_percentage: 50 },
          { key: 'a', rollout_percentage: 50 },
        ],
      },
    }),
  ).toThrow('more than once');
  expect(() => ok({ multivariate: { variants: [{ key: 'a', rollout_percentage: 99 }] } })).toThrow(
    'sum to 100',
  );
  expect(() => ok({ payloads: { true: '1' } })).not.toThrow();
  expect(() => ok({ payloads: { a: '1' } })).toThrow('"true"');
  expect(() => ok({ aggregation_group_type_index: 1 }, [0])).toThrow('Group type index 1');
  expect(() => ok({ aggregation_group_type_index: 1 }, [1])).not.toThrow();
});

test('enrollment condition, slugs and unique keys', () => {
  expect(enrollmentSuperGroups('k')).toEqual([
    {
      properties: [{ key: '$feature_enrollment/k', type: 'person', operator: 'exact', value: ['true'] }],
      rollout_percentage: 100,
    },
  ]);
  expect(withoutEnrollment({ groups: [], super_groups: enrollmentSuperGroups('k') })).toEqual({ groups: [] });
  expect(slugifyKey('  Dark Mode: Beta! ')).toBe('dark-mode-beta');
  expect(slugifyKey('Crème brûlée')).toBe('creme-brulee');
  expect(slugifyKey('!!!')).toBe('feature');
  expect(uniqueKey('a', new Set(['a', 'a-2']))).toBe('a-3');
});

test('bearer parsing', () => {
  expect(parseBearer(`Bearer phx_${'a'.repeat(47)}`)).toBe(`phx_${'a'.repeat(47)}`);
  for (const h of [undefined, 'Basic x', `Bearer phc_${'a'.repeat(43)}`, 'Bearer phx_bad!', 'Bearer'])
    expect(() => parseBearer(h)).toThrow(AuthenticationError);
});

test('stringifyPage writes shared organizations once and the same text as JSON.stringify', () => {
  const org = { id: 'o', name: 'Org "quoted" \u2028', teams: [{ id: 1, name: 'x' }] };
  const team = { id: 1, name: 'x' };
  const users = [
    { uuid: 'a', team, organization: org, first_name: '\u0000-free but odd: "\\u0000' },
    { uuid: 'b', team: null, organization: org, first_name: 'b' },
    { uuid: 'c', team, organization: null, first_name: 'c' },
  ] as unknown as Parameters<typeof stringifyPage>[1];
  const envelope = { count: 3, next: null, previous: null, results: users };
  expect(stringifyPage(envelope, users)).toBe(JSON.stringify(envelope));
});
