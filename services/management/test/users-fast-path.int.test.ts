// The users read fast path (node:http in front of Express) answers exactly what the Express
// routes answer: the same request spelled with a percent-encoded character is left to Express,
// so each pair below compares the two paths byte for byte, errors included.
import type { IncomingMessage } from 'node:http';
import { matchUserRead, stringifyPage } from '../src/users/user-fast-path';
import { call, createKey, seed, startHarness, type Fixture, type Harness } from './helpers';

let h: Harness;
let f: Fixture;
let aliceKey: string;
let staffKey: string;
let noScopeKey: string;

beforeAll(async () => {
  h = await startHarness();
  f = await seed(h.prisma);
  aliceKey = await createKey(h.prisma, f.alice.id, ['user:read']);
  staffKey = await createKey(h.prisma, f.staff.id, ['*']);
  noScopeKey = await createKey(h.prisma, f.alice.id, ['project:read']);
});
afterAll(() => h.stop());

const pairs: Array<[string, string, string, () => string | undefined]> = [
  ['retrieve @me', '/api/users/@me/', '/api/users/%40me/', () => aliceKey],
  ['retrieve by uuid', `/api/users/{alice}/`, `/api/users/{alice%}/`, () => staffKey],
  ['list', '/api/users/?limit=2&offset=1', '/api/users/?limit=%32&offset=1', () => staffKey],
  ['list of a member', '/api/users/?is_staff=false', '/api/users/?is_staff=fals%65', () => aliceKey],
  ['no key', '/api/users/@me/', '/api/users/%40me/', () => undefined],
  ['missing scope', '/api/users/', '/api/users/?limit=%31%30%30', () => noScopeKey],
  ['another organization', `/api/users/{bob}/`, `/api/users/{bob%}/`, () => aliceKey],
  ['bad limit', '/api/users/?limit=0', '/api/users/?limit=%30', () => aliceKey],
];

test.each(pairs)('%s: fast path and Express agree', async (_name, fast, slow, key) => {
  // {x%}: the uuid with its first character percent-encoded (Express decodes it; the fast path passes).
  const enc = (u: string) => `%${u.charCodeAt(0).toString(16)}${u.slice(1)}`;
  const fill = (p: string) =>
    p
      .replace('{alice%}', enc(f.alice.uuid))
      .replace('{bob%}', enc(f.bob.uuid))
      .replace('{alice}', f.alice.uuid)
      .replace('{bob}', f.bob.uuid);
  const a = await call(h, 'GET', fill(fast), key());
  const b = await call(h, 'GET', fill(slow), key());
  expect(a.status).toBe(b.status);
  // Page links name the query as the client spelled it; everything else is identical.
  const strip = (body: unknown) =>
    JSON.parse(JSON.stringify(body).replace(/"(next|previous)":"[^"]*"/g, '"$1":""'));
  expect(strip(a.body)).toEqual(strip(b.body));
  expect(a.headers.get('content-type')).toBe(b.headers.get('content-type'));
  expect(a.headers.get('x-request-id')).toBeTruthy();
  expect(a.headers.get('access-control-allow-origin')).toBe(b.headers.get('access-control-allow-origin'));
});

test('which requests the fast path claims', () => {
  const m = (method: string, url: string) =>
    matchUserRead({ method, url } as IncomingMessage, url.split('?')[0]!);
  expect(m('GET', `/api/users/${f.alice.uuid}/`)).toEqual({ kind: 'retrieve', id: f.alice.uuid });
  expect(m('GET', '/api/users/@me/')).toEqual({ kind: 'retrieve', id: '@me' });
  expect(m('GET', '/api/users/?limit=5&is_staff=true')).toEqual({
    kind: 'list',
    query: { limit: '5', is_staff: 'true' },
  });
  for (const [method, url] of [
    ['GET', '/api/users/%40me/'],
    ['GET', '/api/users/@me/?x=1'],
    ['GET', '/api/users/?limit=%31'],
    ['GET', '/api/users/?limit=1&limit=2'],
    ['GET', '/api/users/?search=a'],
    ['PATCH', '/api/users/@me/'],
    ['GET', '/api/users/@me/hedgehog_config/'],
    ['GET', '/api/users'],
  ])
    expect([method, url, m(method!, url!)]).toEqual([method, url, undefined]);
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
