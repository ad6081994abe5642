// Hostile input: every request below once answered 500. Each must now be a 4xx with a JSON
// body saying what is wrong (detail, and attr naming the field where there is one), and the
// service must still answer ordinary requests afterwards.
import { seed, createKey, startHarness, type Fixture, type Harness } from './helpers';

let h: Harness;
let f: Fixture;
let key: string;
let flagId: number;
let featureId: string;

/** `depth` nested objects around `leaf`: {a: {a: ... leaf}}. */
function nested(depth: number, leaf: unknown = 1): unknown {
  let v = leaf;
  for (let i = 0; i < depth; i++) v = { a: v };
  return v;
}

interface Case {
  name: string;
  method: string;
  path: () => string;
  /** A value sent as JSON, or a string sent as the raw body text. */
  body?: unknown;
  raw?: string;
  status: number;
  attr?: string | null;
  /** A fragment the detail must contain. */
  detail?: RegExp;
}

async function send(c: Case) {
  const body = c.raw ?? (c.body === undefined ? undefined : JSON.stringify(c.body));
  const res = await fetch(`${h.url}${c.path()}`, {
    method: c.method,
    headers: {
      authorization: `Bearer ${key}`,
      ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
    },
    body,
  });
  const text = await res.text();
  let json: { type?: string; detail?: string; attr?: string | null } | undefined;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: res.status, json, contentType: res.headers.get('content-type') ?? '', text };
}

beforeAll(async () => {
  h = await startHarness();
  f = await seed(h.prisma);
  key = await createKey(h.prisma, f.alice.id, ['*']);
  const flag = await h.prisma.featureFlag.create({
    data: { teamId: f.teamA.id, key: 'hostile-flag', filters: { groups: [] } },
  });
  flagId = flag.id;
  const feature = await h.prisma.earlyAccessFeature.create({
    data: { teamId: f.teamA.id, name: 'hostile feature' },
  });
  featureId = feature.id;
});
afterAll(() => h.stop());

const cursor = (ts: string) =>
  Buffer.from(JSON.stringify([ts, '00000000-0000-4000-8000-000000000000'])).toString('base64url');
const me = '/api/users/@me/';
const flags = () => `/api/projects/${f.teamA.id}/feature_flags/`;
const features = () => `/api/projects/${f.teamA.id}/early_access_feature/`;
const events = () => `/api/projects/${f.teamA.id}/events/`;
const persons = () => `/api/projects/${f.teamA.id}/persons/`;
const NUL = /NUL|[Nn]ull character/;
const SURROGATE = /surrogate/;
const DEEP = /deeper than 64/;

const cases: Case[] = [
  // NUL in strings, keys and path segments
  {
    name: 'NUL in first_name',
    method: 'PATCH',
    path: () => me,
    body: { first_name: 'a\u0000b' },
    status: 400,
    attr: 'first_name',
    detail: NUL,
  },
  {
    name: 'NUL in a notification_settings key',
    method: 'PATCH',
    path: () => me,
    body: { notification_settings: { 'a\u0000': true } },
    status: 400,
    attr: 'notification_settings["a\ufffd"]',
    detail: NUL,
  },
  {
    name: 'NUL in a notification_settings value',
    method: 'PATCH',
    path: () => me,
    body: { notification_settings: { plugin_disabled: 'x\u0000' } },
    status: 400,
    attr: 'notification_settings.plugin_disabled',
    detail: NUL,
  },
  {
    name: 'NUL in a flag name',
    method: 'POST',
    path: flags,
    body: { key: 'nul-flag', name: 'a\u0000' },
    status: 400,
    attr: 'name',
    detail: NUL,
  },
  {
    name: 'NUL in a flag filter value',
    method: 'PATCH',
    path: () => `${flags()}${flagId}/`,
    body: { filters: { groups: [{ properties: [{ key: 'email', value: 'x\u0000' }] }] } },
    status: 400,
    attr: 'filters.groups[0].properties[0].value',
    detail: NUL,
  },
  {
    name: 'NUL in an early access feature name',
    method: 'POST',
    path: features,
    body: { name: 'a\u0000' },
    status: 400,
    attr: 'name',
    detail: NUL,
  },
  {
    name: 'NUL in an early access feature description',
    method: 'PATCH',
    path: () => `${features()}${featureId}/`,
    body: { description: 'a\u0000' },
    status: 400,
    attr: 'description',
    detail: NUL,
  },
  {
    name: 'NUL in a key label',
    method: 'POST',
    path: () => '/api/personal_api_keys/',
    body: { label: 'a\u0000', scopes: ['user:read'] },
    status: 400,
    attr: 'label',
    detail: NUL,
  },
  {
    name: 'NUL in a scene',
    method: 'POST',
    path: () => '/api/users/@me/scene_personalisation/',
    body: { scene: 'a\u0000', dashboard: 1 },
    status: 400,
    attr: 'scene',
    detail: NUL,
  },
  {
    name: 'NUL in a path segment',
    method: 'GET',
    path: () => '/api/personal_api_keys/a%00b/',
    status: 400,
    attr: 'path',
    detail: NUL,
  },
  {
    name: 'NUL in the events distinct_id filter',
    method: 'GET',
    path: () => `${events()}?distinct_id=a%00b`,
    status: 400,
    attr: 'distinct_id',
    detail: NUL,
  },
  {
    name: 'NUL in the events event filter',
    method: 'GET',
    path: () => `${events()}?event=a%00b`,
    status: 400,
    attr: 'event',
    detail: NUL,
  },
  {
    name: 'NUL in the persons distinct_id filter',
    method: 'GET',
    path: () => `${persons()}?distinct_id=a%00b`,
    status: 400,
    attr: 'distinct_id',
    detail: NUL,
  },
  {
    name: 'NUL in a query parameter name',
    method: 'GET',
    path: () => `${persons()}?x%00=1`,
    status: 400,
    attr: '["x\ufffd"]',
    detail: NUL,
  },
  // lone surrogates (JSON-escaped, so the body itself is valid UTF-8)
  {
    name: 'lone surrogate in first_name',
    method: 'PATCH',
    path: () => me,
    raw: '{"first_name":"a\\ud800b"}',
    status: 400,
    attr: 'first_name',
    detail: SURROGATE,
  },
  {
    name: 'lone low surrogate in a flag name',
    method: 'POST',
    path: flags,
    raw: '{"key":"s-flag","name":"\\udc00"}',
    status: 400,
    attr: 'name',
    detail: SURROGATE,
  },
  {
    name: 'lone surrogate in a hedgehog_config key',
    method: 'PATCH',
    path: () => `${me}hedgehog_config/`,
    raw: '{"\\ud800":1}',
    status: 400,
    attr: '["\ufffd"]',
    detail: SURROGATE,
  },
  // nesting
  {
    name: 'deep flag payload',
    method: 'PATCH',
    path: () => `${flags()}${flagId}/`,
    body: { filters: { payloads: { true: nested(130) } } },
    status: 400,
    detail: DEEP,
  },
  {
    name: 'deep hedgehog_config (sub-resource)',
    method: 'PATCH',
    path: () => `${me}hedgehog_config/`,
    body: { accessories: nested(200) },
    status: 400,
    detail: DEEP,
  },
  {
    name: 'deep hedgehog_config (user PATCH)',
    method: 'PATCH',
    path: () => me,
    body: { hedgehog_config: nested(200) },
    status: 400,
    detail: DEEP,
  },
  {
    name: 'deep notification_settings',
    method: 'PATCH',
    path: () => me,
    body: { notification_settings: nested(130) },
    status: 400,
    detail: DEEP,
  },
  {
    name: 'deep events_column_config',
    method: 'PATCH',
    path: () => me,
    body: { events_column_config: nested(130) },
    status: 400,
    detail: DEEP,
  },
  {
    name: 'deep has_seen_product_intro_for',
    method: 'PATCH',
    path: () => me,
    body: { has_seen_product_intro_for: nested(130) },
    status: 400,
    detail: DEEP,
  },
  {
    name: 'deep body root',
    method: 'PATCH',
    path: () => me,
    raw: `${'['.repeat(5000)}${']'.repeat(5000)}`,
    status: 400,
    detail: DEEP,
  },
  // ids past int4, negative, fractional, infinite
  {
    name: 'set_current_team 2^31',
    method: 'PATCH',
    path: () => me,
    body: { set_current_team: 2147483648 },
    status: 400,
    attr: 'set_current_team',
  },
  {
    name: 'set_current_team "2147483648"',
    method: 'PATCH',
    path: () => me,
    body: { set_current_team: '2147483648' },
    status: 400,
    attr: 'set_current_team',
  },
  {
    name: 'set_current_team 1e400',
    method: 'PATCH',
    path: () => me,
    raw: '{"set_current_team":1e400}',
    status: 400,
    attr: 'set_current_team',
  },
  {
    name: 'feature_flag_id 2^31',
    method: 'POST',
    path: features,
    body: { name: 'x', feature_flag_id: 2147483648 },
    status: 400,
    attr: 'feature_flag_id',
  },
  {
    name: 'feature_flag_id -1',
    method: 'POST',
    path: features,
    body: { name: 'x', feature_flag_id: -1 },
    status: 400,
    attr: 'feature_flag_id',
  },
  {
    name: 'feature_flag_id 1.5',
    method: 'POST',
    path: features,
    body: { name: 'x', feature_flag_id: 1.5 },
    status: 400,
    attr: 'feature_flag_id',
  },
  {
    name: 'scene_personalisation dashboard 2^31',
    method: 'POST',
    path: () => `${me}scene_personalisation/`,
    body: { scene: 's', dashboard: 2147483648 },
    status: 400,
    attr: 'dashboard',
  },
  { name: 'project id 2^31 in a path', method: 'GET', path: () => '/api/projects/2147483648/', status: 404 },
  {
    name: 'project id -1 in a path',
    method: 'GET',
    path: () => '/api/projects/-1/feature_flags/',
    status: 404,
  },
  {
    name: 'project id 1e400 in a path',
    method: 'GET',
    path: () => '/api/projects/1e400/events/',
    status: 404,
  },
  {
    name: 'flag id 2^31 in a path',
    method: 'PATCH',
    path: () => `${flags()}2147483648/`,
    body: { name: 'x' },
    status: 404,
  },
  { name: 'flag id 1.5 in a path', method: 'DELETE', path: () => `${flags()}1.5/`, status: 404 },
  // malformed percent-encoding
  {
    name: 'malformed percent-encoding in a path',
    method: 'GET',
    path: () => '/api/users/%E0%A4%A/',
    status: 400,
    attr: 'path',
    detail: /percent-encoding/,
  },
  {
    name: 'truncated percent-encoding in a path',
    method: 'DELETE',
    path: () => '/api/personal_api_keys/%/',
    status: 400,
    attr: 'path',
  },
  // dates Postgres cannot hold
  {
    name: 'events after -271821',
    method: 'GET',
    path: () => `${events()}?after=-271821-04-20T00:00:00Z`,
    status: 400,
    attr: 'after',
    detail: /9999/,
  },
  {
    name: 'events before +275760',
    method: 'GET',
    path: () => `${events()}?before=%2B275760-09-13T00:00:00Z`,
    status: 400,
    attr: 'before',
  },
  {
    name: 'events after year 10000',
    method: 'GET',
    path: () => `${events()}?after=%2B010000-01-01T00:00:00Z`,
    status: 400,
    attr: 'after',
  },
  {
    name: 'events after 5000 BC',
    method: 'GET',
    path: () => `${events()}?after=-005000-01-01T00:00:00Z`,
    status: 400,
    attr: 'after',
  },
  // cursors that decode but name no instant Postgres accepts
  {
    name: 'events cursor on 30 February',
    method: 'GET',
    path: () => `${events()}?cursor=${cursor('2026-02-30 00:00:00+00')}`,
    status: 400,
    attr: 'cursor',
  },
  {
    name: 'events cursor in year 0',
    method: 'GET',
    path: () => `${events()}?cursor=${cursor('0000-01-01 00:00:00+00')}`,
    status: 400,
    attr: 'cursor',
  },
  {
    name: 'events cursor with an offset of 99 hours (the database safety net)',
    method: 'GET',
    path: () => `${events()}?cursor=${cursor('2026-01-01 00:00:00+99')}`,
    status: 400,
  },
];

test.each(cases)('$name → $status', async (c) => {
  const r = await send(c);
  expect({ status: r.status, text: r.text.slice(0, 300) }).toMatchObject({ status: c.status });
  expect(r.contentType).toMatch(/application\/json/);
  expect(r.json).toBeDefined();
  expect(typeof r.json!.detail).toBe('string');
  if (c.status === 400) expect(r.json!.type).toBe('validation_error');
  if (c.attr !== undefined) expect(r.json!.attr).toBe(c.attr);
  if (c.detail) expect(r.json!.detail).toMatch(c.detail);
});

test('ordinary requests still work after all of that', async () => {
  const patched = await send({
    name: 'ok',
    method: 'PATCH',
    path: () => me,
    body: {
      first_name: 'Alice ü 😀',
      notification_settings: { plugin_disabled: false },
      set_current_team: f.teamA2.id,
    },
    status: 200,
  });
  expect(patched.status).toBe(200);
  expect(patched.json).toMatchObject({ first_name: 'Alice ü 😀' });
  const list = await send({
    name: 'ok',
    method: 'GET',
    path: () => `${events()}?after=2020-01-01T00:00:00Z&distinct_id=d1`,
    status: 200,
  });
  expect(list.status).toBe(200);
  const flag = await send({ name: 'ok', method: 'GET', path: () => `${flags()}${flagId}/`, status: 200 });
  expect(flag.status).toBe(200);
  const encoded = await send({
    name: 'ok',
    method: 'GET',
    path: () => `/api/personal_api_keys/%C3%BC/`,
    status: 404,
  });
  expect(encoded.status).toBe(404);
});
