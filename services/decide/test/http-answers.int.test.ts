// What decide answers, exactly: status, the headers that matter (CORS, content type, caching,
// Allow, ETag) and the body, for every path it serves and the usual bad inputs. Recorded against
// the route table and kept as a snapshot, so a change to any answer shows up in review. Values
// that differ per run (tokens, team ids, uuids, ETags) are replaced by placeholders first.
//
// The invariants a snapshot could hide are also asserted by name: local evaluation sends no CORS
// headers at all; /decide and /flags allow any origin without credentials; /array/<token>/config
// answers with or without the trailing slash.
import { randomUUID } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import { generateKeyId, generatePersonalApiKey, hashPersonalApiKey } from '@sett/keys';
import { createProject, insertFlag, startHarness, type Harness, type Project } from './support';

jest.setTimeout(60_000);
let h: Harness;
let project: Project;
let personalKey: string;

const HEADERS = [
  'content-type',
  'content-encoding',
  'cache-control',
  'etag',
  'vary',
  'allow',
  'retry-after',
  'access-control-allow-origin',
  'access-control-allow-credentials',
  'access-control-allow-methods',
  'access-control-allow-headers',
];

beforeAll(async () => {
  h = await startHarness({ config: { maxBodyBytes: 4096 } });
  project = await createProject(h);
  await insertFlag(h.pool, project.teamId, {
    key: 'everyone',
    name: 'Everyone',
    filters: { groups: [{ properties: [], rollout_percentage: 100 }], payloads: { true: '{"a":1}' } },
  });
  await insertFlag(h.pool, project.teamId, {
    key: 'by-email',
    filters: {
      groups: [
        {
          properties: [{ key: 'email', type: 'person', operator: 'icontains', value: '@example.com' }],
          rollout_percentage: 100,
        },
      ],
    },
  });
  await insertFlag(h.pool, project.teamId, {
    key: 'variants',
    filters: {
      groups: [{ properties: [], rollout_percentage: 100, variant: 'test' }],
      multivariate: {
        variants: [
          { key: 'control', rollout_percentage: 50 },
          { key: 'test', rollout_percentage: 50 },
        ],
      },
    },
  });
  const { rows } = await h.pool.query<{ id: number }>(
    `INSERT INTO users (uuid, distinct_id, email, is_active) VALUES (gen_random_uuid(), $1, $2, true) RETURNING id`,
    [randomUUID(), `${randomUUID()}@example.test`],
  );
  await h.pool.query(
    'INSERT INTO organization_memberships (id, organization_id, user_id) VALUES (gen_random_uuid(), $1, $2)',
    [project.organizationId, rows[0]!.id],
  );
  personalKey = generatePersonalApiKey();
  await h.pool.query(
    `INSERT INTO personal_api_keys (id, user_id, label, secure_value, mask_value, scopes) VALUES ($1, $2, 'test', $3, 'phx_...', $4)`,
    [generateKeyId(), rows[0]!.id, hashPersonalApiKey(personalKey), ['feature_flag:read']],
  );
}, 60_000);
afterAll(async () => {
  await h?.stop();
}, 30_000);

type Case = { method?: string; path: string; body?: string | Buffer; headers?: Record<string, string> };
type Answer = { status: number; headers: Record<string, string | null>; body: string };

function normalise(text: string): string {
  return text
    .split(project.token)
    .join('<token>')
    .replace(new RegExp(`\\b${project.teamId}\\b`, 'g'), '<team>')
    .replace(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/gi, '<uuid>')
    .replace(/"feature_flag_id":\d+|"id":\d+/g, (m) => m.replace(/\d+$/, '<id>'))
    .replace(/"evaluatedAt":\d+/g, '"evaluatedAt":<ms>');
}

async function call(c: Case): Promise<Answer> {
  const res = await fetch(`${h.url}${c.path}`, {
    method: c.method ?? 'GET',
    body: c.body,
    headers: c.headers,
  });
  const headers: Record<string, string | null> = {};
  for (const name of HEADERS) {
    const value = res.headers.get(name);
    headers[name] = value === null ? null : name === 'etag' ? '<etag>' : normalise(value);
  }
  const text = await res.text();
  const type = res.headers.get('content-type') ?? '';
  // Big files (SDK bundles, scripts) are pinned by length; the rest by their text.
  const body = text.length > 2000 && !type.includes('json') ? `<${text.length} chars>` : normalise(text);
  return { status: res.status, headers, body };
}

const json = { 'content-type': 'application/json' };
const browser = { ...json, origin: 'https://app.example' };
const evaluation = (extra: Record<string, unknown> = {}) =>
  JSON.stringify({ api_key: project.token, distinct_id: 'user-1', ...extra });

const cases: Array<[string, () => Case]> = [
  [
    'POST /decide/ v=4 from a browser',
    () => ({ method: 'POST', path: '/decide/?v=4', body: evaluation(), headers: browser }),
  ],
  ['POST /decide/ v=3', () => ({ method: 'POST', path: '/decide/?v=3', body: evaluation(), headers: json })],
  [
    'POST /decide (no slash) v=2',
    () => ({ method: 'POST', path: '/decide?v=2', body: evaluation(), headers: json }),
  ],
  [
    'POST /decide/ with person properties',
    () => ({
      method: 'POST',
      path: '/decide/?v=4',
      body: evaluation({ person_properties: { email: 'a@example.com' } }),
      headers: json,
    }),
  ],
  ['POST /flags/', () => ({ method: 'POST', path: '/flags/', body: evaluation(), headers: browser })],
  ['POST /flags/?v=2', () => ({ method: 'POST', path: '/flags/?v=2', body: evaluation(), headers: browser })],
  [
    'POST /flags/?v=2&config=true',
    () => ({ method: 'POST', path: '/flags/?v=2&config=true', body: evaluation(), headers: json }),
  ],
  [
    'POST /flags/ gzip-js',
    () => ({
      method: 'POST',
      path: '/flags/?v=2&compression=gzip-js',
      body: gzipSync(evaluation()),
      headers: json,
    }),
  ],
  [
    'POST /flags/ form-encoded data=',
    () => ({
      method: 'POST',
      path: '/flags/?v=2',
      body: `data=${encodeURIComponent(Buffer.from(evaluation()).toString('base64'))}`,
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    }),
  ],
  [
    'OPTIONS /flags/ preflight',
    () => ({
      method: 'OPTIONS',
      path: '/flags/',
      headers: { origin: 'https://app.example', 'access-control-request-method': 'POST' },
    }),
  ],
  ['GET /flags/ (wrong method)', () => ({ path: '/flags/' })],
  [
    'POST /flags/ malformed JSON',
    () => ({ method: 'POST', path: '/flags/?v=2', body: '{"api_key":', headers: json }),
  ],
  [
    'POST /flags/ no token',
    () => ({
      method: 'POST',
      path: '/flags/?v=2',
      body: JSON.stringify({ distinct_id: 'u' }),
      headers: json,
    }),
  ],
  [
    'POST /flags/ unknown token',
    () => ({
      method: 'POST',
      path: '/flags/?v=2',
      body: JSON.stringify({ api_key: 'phc_nope', distinct_id: 'u' }),
      headers: json,
    }),
  ],
  [
    'POST /flags/ no distinct id',
    () => ({
      method: 'POST',
      path: '/flags/?v=2',
      body: JSON.stringify({ api_key: project.token }),
      headers: json,
    }),
  ],
  [
    'POST /flags/ too large',
    () => ({
      method: 'POST',
      path: '/flags/?v=2',
      body: evaluation({ pad: 'x'.repeat(8000) }),
      headers: json,
    }),
  ],
  [
    'POST /flags/ bad gzip',
    () => ({ method: 'POST', path: '/flags/?compression=gzip-js', body: 'not gzip', headers: json }),
  ],
  [
    'GET /api/feature_flag/local_evaluation (personal key)',
    () => ({
      path: `/api/feature_flag/local_evaluation/?token=${project.token}`,
      headers: { authorization: `Bearer ${personalKey}`, origin: 'https://app.example' },
    }),
  ],
  [
    'GET /flags/definitions (personal key)',
    () => ({
      path: `/flags/definitions?token=${project.token}`,
      headers: { authorization: `Bearer ${personalKey}`, origin: 'https://app.example' },
    }),
  ],
  [
    'GET /flags/definitions without a key',
    () => ({ path: `/flags/definitions?token=${project.token}`, headers: { origin: 'https://app.example' } }),
  ],
  [
    'GET /flags/definitions with a wrong key',
    () => ({
      path: `/flags/definitions?token=${project.token}`,
      headers: { authorization: 'Bearer phx_wrong' },
    }),
  ],
  [
    'OPTIONS local evaluation (no CORS)',
    () => ({
      method: 'OPTIONS',
      path: '/api/feature_flag/local_evaluation/',
      headers: { origin: 'https://app.example', 'access-control-request-method': 'GET' },
    }),
  ],
  [
    'GET /array/<token>/config',
    () => ({ path: `/array/${project.token}/config`, headers: { origin: 'https://app.example' } }),
  ],
  ['GET /array/<token>/config/', () => ({ path: `/array/${project.token}/config/` })],
  ['GET /array/<token>/config.js', () => ({ path: `/array/${project.token}/config.js` })],
  ['GET /array/<token>/config.js/', () => ({ path: `/array/${project.token}/config.js/` })],
  ['GET /array/<unknown>/config', () => ({ path: '/array/phc_nope/config' })],
  [
    'POST /array/<token>/config (wrong method)',
    () => ({ method: 'POST', path: `/array/${project.token}/config`, body: '{}', headers: json }),
  ],
  [
    'GET /api/early_access_features/',
    () => ({
      path: `/api/early_access_features/?token=${project.token}`,
      headers: { origin: 'https://app.example' },
    }),
  ],
  ['GET /api/early_access_features/ without token', () => ({ path: '/api/early_access_features/' })],
  ['GET /api/surveys/', () => ({ path: `/api/surveys/?token=${project.token}` })],
  ['GET /api/web_experiments/', () => ({ path: `/api/web_experiments/?token=${project.token}` })],
  ['GET /api/product_tours/', () => ({ path: `/api/product_tours/?token=${project.token}` })],
  ['GET /api/surveys/ unknown token', () => ({ path: '/api/surveys/?token=phc_nope' })],
  ['GET /static/array.js', () => ({ path: '/static/array.js' })],
  ['GET /static/nope.js', () => ({ path: '/static/nope.js' })],
  ['GET /static/../package.json', () => ({ path: '/static/..%2Fpackage.json' })],
  ['GET /nowhere', () => ({ path: '/nowhere' })],
];

describe('decide answers', () => {
  it.each(cases)('%s', async (_name, make) => {
    expect(await call(make())).toMatchSnapshot();
  });

  it('allows any origin without credentials on /decide and /flags', async () => {
    for (const path of ['/decide/?v=4', '/flags/?v=2']) {
      const a = await call({ method: 'POST', path, body: evaluation(), headers: browser });
      expect(a.status).toBe(200);
      // The origin is echoed (with Vary: Origin): any page may read it, never with credentials.
      expect(a.headers['access-control-allow-origin']).toBe(browser.origin);
      expect(a.headers['access-control-allow-credentials']).toBeNull();
    }
  });

  it('sends no CORS header at all on local evaluation, answered or refused', async () => {
    const cases: Case[] = [
      {
        path: `/flags/definitions?token=${project.token}`,
        headers: { authorization: `Bearer ${personalKey}`, origin: 'https://x.example' },
      },
      { path: '/api/feature_flag/local_evaluation/', headers: { origin: 'https://x.example' } },
      {
        method: 'OPTIONS',
        path: '/flags/definitions',
        headers: { origin: 'https://x.example', 'access-control-request-method': 'GET' },
      },
    ];
    for (const c of cases) {
      const a = await call(c);
      for (const name of HEADERS.filter((n) => n.startsWith('access-control-')))
        expect(a.headers[name]).toBeNull();
    }
  });

  it('answers the remote config with or without the trailing slash, the same way', async () => {
    const plain = await call({ path: `/array/${project.token}/config` });
    const slash = await call({ path: `/array/${project.token}/config/` });
    expect(plain.status).toBe(200);
    expect(slash).toEqual(plain);
  });
});
