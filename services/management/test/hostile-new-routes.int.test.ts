// Hostile input at the routes added for PostHog's API clients and the console (insights,
// dashboards, annotations, definitions, groups, sign-in, invites, the console's files), derived
// from the route table: for each, a body nested 200 deep, a 2 MB body, NUL and bad UTF-8 in
// strings and paths, an overlong path parameter, a catastrophic-backtracking search, and a
// 16 KB cookie. Every answer is a 4xx or a normal answer, never a 5xx, and none stalls.
import { call, createKey, seed, startHarness, type Fixture, type Harness } from './helpers';
import { managementRoutes } from '../src/routes';

const TAGS = new Set([
  'insights',
  'dashboards',
  'annotations',
  'definitions',
  'groups',
  'sessions',
  'console',
]);

let h: Harness;
let f: Fixture;
let key: string;

beforeAll(async () => {
  h = await startHarness();
  f = await seed(h.prisma);
  key = await createKey(h.prisma, f.alice.id, ['*']);
});
afterAll(() => h.stop());

const routes = managementRoutes.routes.filter(
  (r) => TAGS.has(r.tag) || r.url.includes('/invites/') || r.url.startsWith('/api/signup/'),
);

/** The route's path with its parameters filled in (`bad` replaces the last one). */
function pathOf(url: string, bad?: string): string {
  const params = [...url.matchAll(/:([a-z_]+)/g)].map((m) => m[1]);
  let out = url;
  params.forEach((p, i) => {
    const value =
      i === params.length - 1 && bad !== undefined
        ? bad
        : p === 'project_id'
          ? String(f.teamA.id)
          : p === 'id' && url.startsWith('/api/organizations/')
            ? f.orgA.id
            : '1';
    out = out.replace(`:${p}`, value);
  });
  return out;
}

function deep(n: number): unknown {
  let v: unknown = 'x';
  for (let i = 0; i < n; i++) v = { a: v };
  return v;
}

async function send(
  method: string,
  path: string,
  body?: string | Buffer,
  headers: Record<string, string> = {},
) {
  const started = Date.now();
  const res = await fetch(`${h.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', ...headers },
    body: method === 'GET' || method === 'DELETE' ? undefined : body,
    signal: AbortSignal.timeout(15_000),
  });
  await res.arrayBuffer();
  return { status: res.status, ms: Date.now() - started };
}

it.each(routes.map((r) => [`${r.method} ${r.url}`, r] as const))('%s', async (_name, r) => {
  const hasParam = r.url.includes(':');
  const cases: Array<[string, string, string | Buffer | undefined, Record<string, string>?]> = [
    ['deep body', pathOf(r.url), JSON.stringify({ name: deep(200), query: deep(200), filters: deep(200) })],
    ['2 MB body', pathOf(r.url), JSON.stringify({ name: 'x'.repeat(2 * 1024 * 1024) })],
    [
      'NUL in strings',
      pathOf(r.url),
      JSON.stringify({
        name: 'a\u0000b',
        email: 'a\u0000@b.c',
        password: '\u0000'.repeat(20),
        content: '\u0000',
        token: '\u0000',
      }),
    ],
    // Bytes that are not UTF-8 at all (a lone continuation byte, an overlong encoding).
    [
      'bad UTF-8',
      pathOf(r.url),
      Buffer.concat([Buffer.from('{"name": "'), Buffer.from([0x80, 0xc0, 0xaf, 0xff]), Buffer.from('"}')]),
    ],
    ['not JSON', pathOf(r.url), '{"name": '],
    [
      'catastrophic search',
      `${pathOf(r.url)}?search=${encodeURIComponent(`${'a'.repeat(5000)}!`)}&short_id=(a%2B)%2B%24`,
      undefined,
    ],
    ['16 KB cookie', pathOf(r.url), '{}', { cookie: `sett_session=${'a'.repeat(16_384)}; sett_csrftoken=x` }],
  ];
  if (hasParam) {
    cases.push(['overlong parameter', pathOf(r.url, 'z'.repeat(5000)), '{}']);
    cases.push(['NUL parameter', pathOf(r.url, '%00'), '{}']);
    cases.push(['encoded slash parameter', pathOf(r.url, '..%2F..%2Fetc'), '{}']);
  }
  for (const [what, path, body, headers] of cases) {
    const res = await send(r.method, path, body, headers);
    expect({ what, status: res.status < 500 }).toEqual({ what, status: true });
    expect({ what, fast: res.ms < 5_000 }).toEqual({ what, fast: true });
  }
  // Still serving afterwards.
  expect((await call(h, 'GET', '/api/users/@me/', key)).status).toBe(200);
});
