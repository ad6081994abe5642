// POST /decide and /flags through decide's route table, however the request is spelled: with or
// without the trailing slash, in any letter case, with a Content-Encoding body, with repeated
// query parameters. Each spelling must get the same answer (status, body, headers). (These
// cases were first written when a node:http fast path and Express served them side by side.)
import { gzipSync } from 'node:zlib';
import { createProject, insertFlag, startHarness, type Harness, type Project } from './support';

let h: Harness;
let project: Project;

beforeAll(async () => {
  h = await startHarness({ config: { maxBodyBytes: 4096 } });
  project = await createProject(h);
  await insertFlag(h.pool, project.teamId, {
    key: 'everyone',
    name: 'Everyone',
    filters: { groups: [{ properties: [], rollout_percentage: 100 }], payloads: { true: '{"a":1}' } },
  });
  await insertFlag(h.pool, project.teamId, {
    key: 'half',
    filters: { groups: [{ properties: [], rollout_percentage: 50 }] },
  });
});

afterAll(async () => {
  await h?.stop();
});

interface Raw {
  status: number;
  text: string;
  headers: Record<string, string | null>;
}

async function raw(path: string, body: string | Buffer, headers: Record<string, string> = {}): Promise<Raw> {
  const res = await fetch(h.url + path, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body,
  });
  const pick = ['content-type', 'access-control-allow-origin', 'access-control-allow-credentials', 'vary'];
  return {
    status: res.status,
    // Per response by design: compared by shape, the rest byte for byte.
    text: (await res.text()).replace(
      /"requestId":"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}","evaluatedAt":\d{13}}$/,
      '"requestId":"<uuid>","evaluatedAt":0}',
    ),
    headers: Object.fromEntries(pick.map((k) => [k, res.headers.get(k)])),
  };
}

const json = (extra: Record<string, unknown> = {}) =>
  JSON.stringify({ api_key: project.token, distinct_id: 'user-7', ...extra });

describe('every spelling of a decide request gets the same answer', () => {
  it.each([
    ['an evaluation', () => json(), 200],
    ['no api key', () => JSON.stringify({ distinct_id: 'u' }), 401],
    ['an unknown api key', () => JSON.stringify({ api_key: 'phc_nope', distinct_id: 'u' }), 401],
    ['no distinct_id', () => JSON.stringify({ api_key: project.token }), 400],
    ['a malformed body', () => '{oops', 400],
    ['an empty body', () => '', 400],
    ['a body over the limit', () => json({ person_properties: { blob: 'x'.repeat(5000) } }), 413],
  ])('%s', async (_name, makeBody, status) => {
    const headers = { origin: 'https://app.example.com' };
    // /decide/ is served by the fast path; /Decide/ only matches Express's case-insensitive route.
    for (const v of ['?v=4', '?v=3', '']) {
      const fast = await raw(`/decide/${v}`, makeBody(), headers);
      const viaExpress = await raw(`/Decide/${v}`, makeBody(), headers);
      expect(fast.status).toBe(status);
      expect(fast).toEqual(viaExpress);
    }
  });

  it('inflates Content-Encoding bodies', async () => {
    const res = await raw('/flags?v=2', gzipSync(json()), { 'content-encoding': 'gzip' });
    expect(res.status).toBe(200);
    expect(res.text).toBe((await raw('/flags?v=2', json())).text);
  });

  it('reads v and compression only when given once', async () => {
    const once = await raw('/decide/?v=4', json());
    expect(JSON.parse(once.text).flags.everyone.enabled).toBe(true);
    const twice = await raw('/decide/?v=4&v=4', json());
    // A repeated v is not a version: the oldest shape, as through Express.
    expect(JSON.parse(twice.text).featureFlags).toEqual([
      'everyone',
      ...(JSON.parse(once.text).flags.half.enabled ? ['half'] : []),
    ]);
    expect(twice).toEqual(await raw('/Decide/?v=4&v=4', json()));
  });

  it('answers other methods and paths (405, 404, preflight)', async () => {
    expect((await fetch(`${h.url}/decide/?v=4`)).status).toBe(405);
    expect((await fetch(`${h.url}/flags`, { method: 'PUT' })).status).toBe(405);
    expect((await raw('/decide/extra', json())).status).toBe(404);
    const pre = await fetch(`${h.url}/flags/?v=2`, {
      method: 'OPTIONS',
      headers: { origin: 'https://x.test' },
    });
    expect(pre.status).toBe(204);
    expect(pre.headers.get('access-control-allow-origin')).toBe('https://x.test');
  });

  it('counts requests in the decide metrics', async () => {
    await raw('/flags/?v=2', json());
    const metrics = await (await fetch(`${h.url}/_metrics`)).text();
    expect(metrics).toMatch(/decide_requests_total\{endpoint="flags",shape="v4",outcome="ok"[^}]*\} [1-9]/);
  });
});
