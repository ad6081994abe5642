// Remote config over real HTTP, Postgres and Redis: /array/<token>/config and config.js, token
// rules, headers, the document built from the team row, Redis write-back, invalidation by
// @sett/cache writers and pub/sub; and /flags?v=2 fields (requestId, evaluatedAt, config=true,
// flag_keys).
import { invalidateRemoteConfig, redisKeys, writeFlagList } from '@sett/cache';
import { createProject, insertFlag, post, startHarness, type Harness, type Project } from './support';
import { waitFor as pollUntil } from '@sett/testing';

let h: Harness;
let project: Project;

beforeAll(async () => {
  // Short in-process TTL: pub/sub must be what makes changes visible, not expiry.
  h = await startHarness({ subscribe: true, config: { flagCacheTtlMs: 60_000 } });
  project = await createProject(h);
  await h.pool.query(
    `UPDATE teams SET heatmaps_opt_in = true, capture_dead_clicks = true, autocapture_web_vitals_opt_in = true,
       autocapture_web_vitals_allowed_metrics = '["LCP","CLS","bogus"]', session_recording_opt_in = true,
       surveys_opt_in = true WHERE id = $1`,
    [project.teamId],
  );
  await insertFlag(h.pool, project.teamId, {
    key: 'beta',
    name: 'Beta programme',
    filters: { groups: [{ properties: [], rollout_percentage: 100 }] },
  });
  await insertFlag(h.pool, project.teamId, {
    key: 'other',
    filters: { groups: [{ properties: [], rollout_percentage: 100 }] },
  });
});

afterAll(async () => {
  await h?.stop();
});

const get = (path: string, headers: Record<string, string> = {}) => fetch(h.url + path, { headers });
// eslint-disable-next-line @typescript-eslint/no-explicit-any
const config = async (token: string): Promise<Record<string, any>> =>
  (await (await get(`/array/${token}/config`)).json()) as Record<string, unknown>;

describe('GET /array/<token>/config', () => {
  it('answers the document built from the project settings, with CORS and cache headers', async () => {
    const res = await get(`/array/${project.token}/config`, { origin: 'https://site.example' });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/json');
    expect(res.headers.get('access-control-allow-origin')).toBe('https://site.example');
    expect(res.headers.get('vary')).toBe('Origin, Referer');
    expect(res.headers.get('cache-control')).toMatch(/max-age=\d+/);
    expect(await res.json()).toEqual({
      token: project.token,
      supportedCompression: ['gzip', 'gzip-js'],
      hasFeatureFlags: true,
      captureDeadClicks: true,
      capturePerformance: {
        network_timing: true,
        web_vitals: true,
        web_vitals_allowed_metrics: ['LCP', 'CLS'],
      },
      autocapture_opt_out: false,
      autocaptureExceptions: false,
      analytics: { endpoint: '/i/v0/e/' },
      elementsChainAsString: true,
      errorTracking: { autocaptureExceptions: false, suppressionRules: [] },
      sessionRecording: false,
      heatmaps: true,
      surveys: false,
      defaultIdentifiedOnly: true,
      siteApps: [],
    });
    // Written back for the next instance, with a TTL.
    expect(JSON.parse((await h.redis.get(redisKeys.remoteConfig(project.teamId)))!).token).toBe(
      project.token,
    );
    expect(await h.redis.ttl(redisKeys.remoteConfig(project.teamId))).toBeGreaterThan(0);
  });

  it('config.js assigns the document to window._POSTHOG_REMOTE_CONFIG[token]', async () => {
    const res = await get(`/array/${project.token}/config.js`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/javascript');
    const script = await res.text();
    const window: { _POSTHOG_REMOTE_CONFIG?: Record<string, { config: Record<string, unknown> }> } = {};
    new Function('window', script)(window);
    const registered = window._POSTHOG_REMOTE_CONFIG![project.token]!;
    expect(registered).toMatchObject({ siteApps: [], config: { token: project.token, heatmaps: true } });
    expect(registered.config).not.toHaveProperty('siteApps');
  });

  it('404 for an unknown token, 400 for a malformed or over-long one', async () => {
    expect((await get('/array/phc_doesnotexist/config')).status).toBe(404);
    expect((await get(`/array/${'a'.repeat(150)}/config.js`)).status).toBe(404);
    for (const bad of ['phc%20x', 'phc.x', 'a'.repeat(201)]) {
      const res = await get(`/array/${bad}/config`);
      expect(res.status).toBe(400);
      expect(await res.json()).toMatchObject({ type: 'validation_error', attr: 'token' });
    }
    expect((await get(`/array/${project.token}/other`)).status).toBe(404);
  });

  it('hasFeatureFlags is false without an active flag that /flags evaluates', async () => {
    const p = await createProject(h);
    await insertFlag(h.pool, p.teamId, { key: 'off', active: false, filters: { groups: [] } });
    await insertFlag(h.pool, p.teamId, { key: 'gone', deleted: true, filters: { groups: [] } });
    const id = await insertFlag(h.pool, p.teamId, { key: 'remote', filters: { groups: [] } });
    await h.pool.query('UPDATE feature_flags SET is_remote_configuration = true WHERE id = $1', [id]);
    const body = await config(p.token);
    expect(body.hasFeatureFlags).toBe(false);
    expect(body.capturePerformance).toEqual({
      network_timing: true,
      web_vitals: false,
      web_vitals_allowed_metrics: null,
    });
  });

  it('a flag list write drops the document everywhere; the next request rebuilds it', async () => {
    const p = await createProject(h);
    expect((await config(p.token)).hasFeatureFlags).toBe(false);
    await insertFlag(h.pool, p.teamId, { key: 'new', filters: { groups: [] } });
    // Still the in-process copy (TTL 60 s) until a writer says otherwise.
    expect((await config(p.token)).hasFeatureFlags).toBe(false);
    await writeFlagList(h.redis, { teamId: p.teamId, updatedAt: Date.now(), flags: [] });
    expect(await h.redis.get(redisKeys.remoteConfig(p.teamId))).toBeNull();
    await waitFor(async () => (await config(p.token)).hasFeatureFlags === true);
  });

  it('invalidateRemoteConfig (project settings writes) is seen at once', async () => {
    const p = await createProject(h);
    expect((await config(p.token)).heatmaps).toBe(false);
    await h.pool.query('UPDATE teams SET heatmaps_opt_in = true WHERE id = $1', [p.teamId]);
    await invalidateRemoteConfig(h.redis, p.teamId);
    await waitFor(async () => (await config(p.token)).heatmaps === true);
  });

  it('answers from Redis without Postgres once built', async () => {
    const p = await createProject(h);
    await get(`/array/${p.token}/config`);
    await h.decide.remoteConfig.clear();
    await h.pool.query('UPDATE teams SET heatmaps_opt_in = true WHERE id = $1', [p.teamId]);
    // Redis still holds the document built before the update (nothing invalidated it).
    expect((await config(p.token)).heatmaps).toBe(false);
  });
});

describe('/flags?v=2 fields', () => {
  const body = (extra: Record<string, unknown> = {}) => ({
    token: project.token,
    distinct_id: 'u1',
    ...extra,
  });

  it('requestId is a fresh UUID per response and evaluatedAt a millisecond time', async () => {
    const before = Date.now();
    const a = await post(h.url, '/flags/?v=2', body());
    const b = await post(h.url, '/flags/?v=2', body());
    expect(a.body.requestId).toMatch(/^[0-9a-f-]{36}$/);
    expect(a.body.requestId).not.toBe(b.body.requestId);
    expect(a.body.evaluatedAt).toBeGreaterThanOrEqual(before);
    expect(a.body.evaluatedAt).toBeLessThanOrEqual(Date.now());
    expect(a.body.flags.beta.metadata).toEqual({
      id: expect.any(Number),
      version: 1,
      description: 'Beta programme',
    });
    // Left out, not null: posthog-node 5 takes a null payload for a real one.
    expect(a.body.flags.beta.metadata).not.toHaveProperty('payload');
    expect(a.body.flags.other.metadata.description).toBeNull();
  });

  it('config=true merges the remote config at the top level', async () => {
    const res = await post(h.url, '/flags/?v=2&config=true', body());
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      config: { enable_collect_everything: true },
      toolbarParams: {},
      isAuthenticated: false,
      token: project.token,
      hasFeatureFlags: true,
      heatmaps: true,
      sessionRecording: false,
      surveys: false,
      siteApps: [],
      supportedCompression: ['gzip', 'gzip-js'],
      flags: { beta: { enabled: true } },
    });
    const plain = await post(h.url, '/flags/?v=2', body());
    expect(plain.body).not.toHaveProperty('heatmaps');
  });

  it('flag_keys and flag_keys_to_evaluate limit the answer to those flags', async () => {
    const js = await post(h.url, '/flags/?v=2', body({ flag_keys: ['beta', 'missing'] }));
    expect(Object.keys(js.body.flags)).toEqual(['beta']);
    const server = await post(h.url, '/flags/?v=2', body({ flag_keys_to_evaluate: ['other'] }));
    expect(Object.keys(server.body.flags)).toEqual(['other']);
    const all = await post(h.url, '/flags/?v=2', body({ flag_keys: [] }));
    expect(Object.keys(all.body.flags).sort()).toEqual(['beta', 'other']);
    const bad = await post(h.url, '/flags/?v=2', body({ flag_keys: 'beta' }));
    expect(bad.status).toBe(400);
    expect(bad.body).toMatchObject({ attr: 'flag_keys' });
  });
});

async function waitFor(check: () => Promise<boolean>, timeoutMs = 5000): Promise<void> {
  await pollUntil('the remote config condition', check, { timeoutMs, intervalMs: 0 });
}
