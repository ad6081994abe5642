// Project SDK settings and the project secret API key through /api/projects/: reads, PATCH
// validation and scopes, remote config invalidation in Redis, rotation (shown once, stored
// hashed, previous key kept as the backup) and admin-only secret key actions.
import { redisKeys } from '@sett/cache';
import { hashProjectSecretKey } from '@sett/keys';
import { call, createKey, seed, startHarness, type Fixture, type Harness } from './helpers';

let h: Harness;
let f: Fixture;
let member: string;
let memberRead: string;
let admin: string;

beforeAll(async () => {
  h = await startHarness();
  f = await seed(h.prisma);
  member = await createKey(h.prisma, f.alice.id, ['project:write']);
  memberRead = await createKey(h.prisma, f.alice.id, ['project:read']);
  admin = await createKey(h.prisma, f.adminA.id, ['*']);
});

afterAll(async () => {
  await h?.stop();
});

describe('SDK settings', () => {
  it('reads the defaults with the project', async () => {
    const res = await call(h, 'GET', `/api/projects/${f.teamA.id}/`, memberRead);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      id: f.teamA.id,
      autocapture_opt_out: false,
      autocapture_exceptions_opt_in: false,
      heatmaps_opt_in: false,
      capture_performance_opt_in: true,
      autocapture_web_vitals_opt_in: false,
      autocapture_web_vitals_allowed_metrics: null,
      capture_dead_clicks: false,
      session_recording_opt_in: false,
      surveys_opt_in: false,
      secret_api_token_mask: null,
      has_secret_api_token_backup: false,
    });
    expect(res.body).not.toHaveProperty('secret_api_token');
    const list = await call(h, 'GET', '/api/projects/', memberRead);
    expect(list.body.results[0]).toHaveProperty('heatmaps_opt_in', false);
  });

  it('PATCH stores the settings and drops the remote config document in Redis', async () => {
    await h.redis.set(redisKeys.remoteConfig(f.teamA.id), '{"stale":true}');
    const res = await call(h, 'PATCH', `/api/projects/${f.teamA.id}/`, member, {
      heatmaps_opt_in: true,
      autocapture_opt_out: true,
      autocapture_web_vitals_opt_in: true,
      autocapture_web_vitals_allowed_metrics: ['LCP', 'CLS'],
      session_recording_opt_in: true,
      surveys_opt_in: true,
      capture_dead_clicks: true,
      autocapture_exceptions_opt_in: true,
      capture_performance_opt_in: false,
    });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      heatmaps_opt_in: true,
      autocapture_opt_out: true,
      autocapture_web_vitals_allowed_metrics: ['LCP', 'CLS'],
      session_recording_opt_in: true,
      capture_performance_opt_in: false,
    });
    expect(await h.redis.get(redisKeys.remoteConfig(f.teamA.id))).toBeNull();
    const again = await call(h, 'GET', `/api/projects/${f.teamA.id}/`, memberRead);
    expect(again.body.autocapture_web_vitals_allowed_metrics).toEqual(['LCP', 'CLS']);
    const cleared = await call(h, 'PATCH', `/api/projects/${f.teamA.id}/`, member, {
      autocapture_web_vitals_allowed_metrics: null,
    });
    expect(cleared.body.autocapture_web_vitals_allowed_metrics).toBeNull();
  });

  it('ignores read-only and unknown fields (api_token stays the same), as PostHog does', async () => {
    const before = await call(h, 'GET', `/api/projects/${f.teamA.id}/`, member);
    const res = await call(h, 'PATCH', `/api/projects/${f.teamA.id}/`, member, {
      api_token: 'phc_mine',
      colour: 1,
    });
    expect(res.status).toBe(200);
    expect(res.body.api_token).toBe(before.body.api_token);
    expect(res.body).not.toHaveProperty('colour');
  });

  it('400 naming the field for wrong types and unknown metrics', async () => {
    for (const [body, attr] of [
      [{ heatmaps_opt_in: 'yes' }, 'heatmaps_opt_in'],
      [{ autocapture_web_vitals_allowed_metrics: ['TTFB'] }, 'autocapture_web_vitals_allowed_metrics'],
    ] as const) {
      const res = await call(h, 'PATCH', `/api/projects/${f.teamA.id}/`, member, body);
      expect(res.status).toBe(400);
      expect(res.body.attr).toBe(attr);
    }
  });

  it('403 without project:write, 404 for another organization', async () => {
    expect((await call(h, 'PATCH', `/api/projects/${f.teamA.id}/`, memberRead, { name: 'x' })).status).toBe(
      403,
    );
    expect((await call(h, 'PATCH', `/api/projects/${f.teamB.id}/`, member, { name: 'x' })).status).toBe(404);
  });
});

describe('privacy settings', () => {
  it('anonymize_ips (off) and geoip_enabled (on) by default; PATCH changes them; wrong types are a 400 naming the field', async () => {
    const before = await call(h, 'GET', `/api/projects/${f.teamA.id}/`, member);
    expect(before.status).toBe(200);
    expect(before.body).toMatchObject({ anonymize_ips: false, geoip_enabled: true });
    const res = await call(h, 'PATCH', `/api/projects/${f.teamA.id}/`, member, {
      anonymize_ips: true,
      geoip_enabled: false,
    });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ anonymize_ips: true, geoip_enabled: false });
    const row = await h.prisma.team.findUniqueOrThrow({ where: { id: f.teamA.id } });
    expect(row).toMatchObject({ anonymizeIps: true, geoipEnabled: false });
    for (const [field, value] of [
      ['anonymize_ips', 'yes'],
      ['geoip_enabled', null],
    ] as const) {
      const bad = await call(h, 'PATCH', `/api/projects/${f.teamA.id}/`, member, { [field]: value });
      expect(bad.status).toBe(400);
      expect(bad.body).toMatchObject({ type: 'validation_error', attr: field });
    }
  });
});

describe('secret API key', () => {
  it('rotation shows a phs_ key once, stores its hash and keeps the previous one as the backup', async () => {
    const first = await call(h, 'PATCH', `/api/projects/${f.teamA2.id}/rotate_secret_token/`, admin);
    expect(first.status).toBe(200);
    const key1: string = first.body.secret_api_token;
    expect(key1).toMatch(/^phs_[A-Za-z0-9]{43}$/);
    expect(first.body.secret_api_token_mask).toBe(`${key1.slice(0, 4)}...${key1.slice(-4)}`);
    expect(first.body.has_secret_api_token_backup).toBe(false);

    const second = await call(h, 'PATCH', `/api/projects/${f.teamA2.id}/rotate_secret_token/`, admin);
    const key2: string = second.body.secret_api_token;
    expect(key2).not.toBe(key1);
    expect(second.body.has_secret_api_token_backup).toBe(true);
    const row = await h.prisma.team.findUniqueOrThrow({ where: { id: f.teamA2.id } });
    expect(row.secretApiTokenHash).toBe(hashProjectSecretKey(key2));
    expect(row.secretApiTokenBackupHash).toBe(hashProjectSecretKey(key1));
    expect(Object.values(row).map(String).join(' ')).not.toContain(key2);

    const read = await call(h, 'GET', `/api/projects/${f.teamA2.id}/`, admin);
    expect(read.body).not.toHaveProperty('secret_api_token');
    expect(read.body.secret_api_token_mask).toBe(second.body.secret_api_token_mask);

    const dropped = await call(h, 'PATCH', `/api/projects/${f.teamA2.id}/delete_secret_token_backup/`, admin);
    expect(dropped.body.has_secret_api_token_backup).toBe(false);
    expect(
      (await h.prisma.team.findUniqueOrThrow({ where: { id: f.teamA2.id } })).secretApiTokenBackupHash,
    ).toBeNull();
  });

  it('only organization admins may rotate or drop the backup (403), as in PostHog', async () => {
    for (const action of ['rotate_secret_token', 'delete_secret_token_backup']) {
      const res = await call(h, 'PATCH', `/api/projects/${f.teamA.id}/${action}/`, member);
      expect(res.status).toBe(403);
    }
  });
});
