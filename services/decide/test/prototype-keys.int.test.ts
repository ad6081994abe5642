// Flag keys that name Object.prototype members (`__proto__`, `constructor`, `toString`) are
// valid keys (letters, digits, `_` and `-`): every response shape must serve them like any
// other flag, and so must local evaluation.
import { createProject, insertFlag, post, startHarness, type Harness, type Project } from './support';

const KEYS = ['__proto__', 'constructor', 'toString', 'hasOwnProperty', 'valueOf'];

let h: Harness;
let project: Project;

beforeAll(async () => {
  h = await startHarness();
  project = await createProject(h);
  for (const key of KEYS)
    await insertFlag(h.pool, project.teamId, {
      key,
      filters: { groups: [{ properties: [], rollout_percentage: 100 }], payloads: { true: '{"k":1}' } },
    });
  await insertFlag(h.pool, project.teamId, {
    key: 'ordinary',
    filters: { groups: [{ properties: [], rollout_percentage: 100 }] },
  });
});

afterAll(async () => {
  await h?.stop();
});

const ALL = [...KEYS, 'ordinary'].sort();
const ownKeys = (o: unknown) => Object.keys(o as object).sort();

describe('flags keyed like Object.prototype members', () => {
  it('are served by /flags?v=2 and decide v4', async () => {
    for (const path of ['/flags/?v=2', '/decide/?v=4']) {
      const res = await post(h.url, path, { api_key: project.token, distinct_id: 'u1' });
      expect(res.status).toBe(200);
      // JSON.parse makes `__proto__` an own property, so Object.keys sees every served key.
      expect(ownKeys(res.body.flags)).toEqual(ALL);
      expect(Object.getOwnPropertyDescriptor(res.body.flags, '__proto__')?.value).toMatchObject({
        key: '__proto__',
        enabled: true,
        metadata: { payload: '{"k":1}' },
      });
    }
  });

  it('are served by decide v3 (with payloads), v2 and v1', async () => {
    const v3 = await post(h.url, '/decide/?v=3', { api_key: project.token, distinct_id: 'u1' });
    expect(ownKeys(v3.body.featureFlags)).toEqual(ALL);
    expect(ownKeys(v3.body.featureFlagPayloads)).toEqual([...KEYS].sort());
    const v2 = await post(h.url, '/decide/?v=2', { api_key: project.token, distinct_id: 'u1' });
    expect(ownKeys(v2.body.featureFlags)).toEqual(ALL);
    const v1 = await post(h.url, '/decide/', { api_key: project.token, distinct_id: 'u1' });
    expect([...(v1.body.featureFlags as string[])].sort()).toEqual(ALL);
  });

  it('are served with config=true (the merged remote config answer)', async () => {
    const res = await post(h.url, '/flags/?v=2&config=true', { api_key: project.token, distinct_id: 'u1' });
    expect(res.status).toBe(200);
    expect(ownKeys(res.body.flags)).toEqual(ALL);
  });

  it('do not break group properties named like them', async () => {
    const res = await post(h.url, '/flags/?v=2', {
      api_key: project.token,
      distinct_id: 'u1',
      groups: JSON.parse('{"__proto__":"g1"}'),
      group_properties: JSON.parse('{"__proto__":{"plan":"pro"}}'),
    });
    expect(res.status).toBe(200);
    expect(ownKeys(res.body.flags)).toEqual(ALL);
  });
});
