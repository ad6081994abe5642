// The public token lists posthog-js reads (/api/early_access_features/, /api/surveys/,
// /api/web_experiments/, /api/product_tours/) against a real decide over Postgres and Redis:
// shapes, stages, token errors, CORS, and that a flags-changed publication drops the cached list.
import { randomUUID } from 'node:crypto';
import { createRedis, redisKeys, type Redis } from '@sett/cache';
import { waitFor } from '@sett/testing';
import { payloadValue } from '../src/public-lists/early-access-feature-store';
import { stagesOf } from '../src/public-lists/public-list-routes';
import { REDIS_URL, createProject, insertFlag, startHarness, type Harness, type Project } from './support';

let h: Harness;
let project: Project;
let publisher: Redis;

beforeAll(async () => {
  // A long TTL: only the invalidation can make a change visible within the test.
  h = await startHarness({ subscribe: true, config: { flagCacheTtlMs: 60_000, tokenCacheTtlMs: 60_000 } });
  project = await createProject(h);
  publisher = createRedis({ url: REDIS_URL });
});
afterAll(async () => {
  publisher.disconnect();
  await h.stop();
});

async function insertFeature(
  teamId: number,
  f: { name: string; stage: string; flagId?: number | null; description?: string; documentationUrl?: string },
): Promise<string> {
  const id = randomUUID();
  await h.pool.query(
    `INSERT INTO early_access_features (id, team_id, feature_flag_id, name, description, stage, documentation_url)
     VALUES ($1, $2, $3, $4, $5, $6, $7)`,
    [id, teamId, f.flagId ?? null, f.name, f.description ?? '', f.stage, f.documentationUrl ?? ''],
  );
  return id;
}

async function get(path: string, headers: Record<string, string> = {}) {
  const res = await fetch(h.url + path, { headers });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: JSON.parse(text) as Record<string, any> }; // eslint-disable-line @typescript-eslint/no-explicit-any
}

describe('GET /api/early_access_features/', () => {
  let betaId: string;
  let alphaId: string;

  beforeAll(async () => {
    const flagId = await insertFlag(h.pool, project.teamId, {
      key: 'new-editor',
      filters: { groups: [], payloads: { true: '{"banner":"Try it"}' } },
    });
    betaId = await insertFeature(project.teamId, {
      name: 'New editor',
      stage: 'beta',
      flagId,
      description: 'Faster',
      documentationUrl: 'https://docs.example/editor',
    });
    alphaId = await insertFeature(project.teamId, { name: 'Dark mode', stage: 'alpha' });
    await insertFeature(project.teamId, { name: 'Draft thing', stage: 'draft' });
    const other = await createProject(h);
    await insertFeature(other.teamId, { name: 'Not ours', stage: 'beta' });
  });

  it('lists the beta features by default, in PostHog’s shape, with CORS for the caller', async () => {
    const res = await get(`/api/early_access_features/?token=${project.token}`, {
      origin: 'https://app.example',
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('access-control-allow-origin')).toBe('https://app.example');
    expect(res.body).toEqual({
      earlyAccessFeatures: [
        {
          id: betaId,
          name: 'New editor',
          description: 'Faster',
          stage: 'beta',
          documentationUrl: 'https://docs.example/editor',
          flagKey: 'new-editor',
          payload: { banner: 'Try it' },
        },
      ],
    });
  });

  it('takes repeated stage parameters, as posthog-js sends them', async () => {
    const res = await get(`/api/early_access_features?token=${project.token}&stage=alpha&stage=beta`);
    expect(res.status).toBe(200);
    expect(res.body.earlyAccessFeatures.map((f: { id: string }) => f.id).sort()).toEqual(
      [alphaId, betaId].sort(),
    );
    const alpha = res.body.earlyAccessFeatures.find((f: { id: string }) => f.id === alphaId);
    expect(alpha).toMatchObject({ flagKey: null, payload: {} });
  });

  it('drops its cached list when management publishes the project on the flags-changed channel', async () => {
    const before = await get(`/api/early_access_features/?token=${project.token}`);
    expect(before.body.earlyAccessFeatures).toHaveLength(1);
    await h.pool.query(`UPDATE early_access_features SET stage = 'beta' WHERE id = $1`, [alphaId]);
    // Still cached (TTL 60 s): the change is invisible until the publication.
    expect(
      (await get(`/api/early_access_features/?token=${project.token}`)).body.earlyAccessFeatures,
    ).toHaveLength(1);
    await publisher.publish(redisKeys.flagsChangedChannel(), String(project.teamId));
    // Delivery is asynchronous: poll until the list changes.
    const after = await waitFor(
      'the published change to reach the cached list',
      async () => {
        const r = await get(`/api/early_access_features/?token=${project.token}`);
        return r.body.earlyAccessFeatures.length === 2 && r;
      },
      { intervalMs: 0 },
    );
    expect(after.body.earlyAccessFeatures).toHaveLength(2);
  });

  it.each([
    ['/api/early_access_features/', 'missing_api_key'],
    ['/api/early_access_features/?token=', 'missing_api_key'],
    ['/api/early_access_features/?token=phc_unknown', 'invalid_api_key'],
    [`/api/early_access_features/?token=${'x'.repeat(500)}`, 'invalid_api_key'],
    ['/api/early_access_features/?token=phc%00x', 'invalid_api_key'],
  ])('%s is a 401 %s', async (path, code) => {
    const res = await get(path, { origin: 'https://app.example' });
    expect(res.status).toBe(401);
    expect(res.body).toMatchObject({ type: 'authentication_error', code });
    expect(res.headers.get('access-control-allow-origin')).toBe('https://app.example');
  });
});

describe.each([
  ['/api/surveys/', { surveys: [] }],
  ['/api/web_experiments/', { experiments: [] }],
  ['/api/product_tours/', { product_tours: [] }],
])('GET %s', (path, empty) => {
  it('answers the empty list for a known token, with or without the trailing slash', async () => {
    expect(await get(`${path}?token=${project.token}`)).toMatchObject({ status: 200, body: empty });
    expect(await get(`${path.slice(0, -1)}?token=${project.token}`)).toMatchObject({
      status: 200,
      body: empty,
    });
  });

  it('answers an unknown or missing token with 401', async () => {
    expect((await get(`${path}?token=phc_nope`)).status).toBe(401);
    expect((await get(path)).status).toBe(401);
  });

  it('answers a preflight and refuses writes', async () => {
    const pre = await fetch(`${h.url}${path}`, {
      method: 'OPTIONS',
      headers: { origin: 'https://a.example' },
    });
    expect(pre.status).toBe(204);
    const post = await fetch(`${h.url}${path}?token=${project.token}`, { method: 'POST' });
    expect(post.status).toBe(405);
  });
});

describe('pure helpers', () => {
  it('reads stages: beta by default, repeated values kept, non-strings dropped', () => {
    expect([...stagesOf(undefined)]).toEqual(['beta']);
    expect([...stagesOf('alpha')]).toEqual(['alpha']);
    expect([...stagesOf(['alpha', 'beta', 'alpha'])]).toEqual(['alpha', 'beta']);
    expect([...stagesOf([{}, ''])]).toEqual(['beta']);
  });

  it('turns the stored flag payload into the feature payload', () => {
    expect(payloadValue(null)).toEqual({});
    expect(payloadValue('{"a":1}')).toEqual({ a: 1 });
    expect(payloadValue('not json')).toBe('not json');
    expect(payloadValue({ b: 2 })).toEqual({ b: 2 });
  });
});
