// Concurrent writes lose with 404/409, never 500 (the loser hits Prisma P2025/P2002, mapped in
// database-errors.ts), and per-user state is bounded: hedgehog_config (16 KB after the merge,
// other free-form user JSON 64 KB) and scene_personalisation (100 scenes).
import {
  MAX_HEDGEHOG_CONFIG_BYTES,
  MAX_SCENE_PERSONALISATIONS,
  MAX_USER_JSON_BYTES,
} from '../src/users/user-schemas';
import { call, createKey, seed, startHarness, type Fixture, type Harness } from './helpers';

const ROUNDS = 8;

let h: Harness;
let f: Fixture;
let aliceKey: string;
let adminKey: string;
let staffKey: string;

beforeAll(async () => {
  h = await startHarness();
  f = await seed(h.prisma);
  aliceKey = await createKey(h.prisma, f.alice.id, ['*']);
  adminKey = await createKey(h.prisma, f.adminA.id, ['*']);
  staffKey = await createKey(h.prisma, f.staff.id, ['*']);
});
afterAll(() => h.stop());

describe('races', () => {
  const features = () => `/api/projects/${f.teamA.id}/early_access_feature/`;

  test('PATCH and DELETE of one early access feature at once: the loser gets 404', async () => {
    const seen = new Set<string>();
    for (let i = 0; i < ROUNDS; i++) {
      const created = await call(h, 'POST', features(), aliceKey, { name: `race ${i}` });
      expect(created.status).toBe(201);
      const path = `${features()}${created.body.id}/`;
      const [patched, deleted] = await Promise.all([
        call(h, 'PATCH', path, aliceKey, { description: `changed ${i}` }),
        call(h, 'DELETE', path, aliceKey),
      ]);
      expect(deleted.status).toBe(204);
      expect([200, 404]).toContain(patched.status);
      if (patched.status === 404) expect(patched.body).toMatchObject({ code: 'not_found' });
      seen.add(`${patched.status}/${deleted.status}`);
      expect((await call(h, 'GET', path, aliceKey)).status).toBe(404);
    }
    expect(seen.size).toBeGreaterThan(0);
  });

  test('two DELETEs of one early access feature at once: one 204, one 404', async () => {
    for (let i = 0; i < ROUNDS; i++) {
      const created = await call(h, 'POST', features(), aliceKey, { name: `double delete ${i}` });
      const path = `${features()}${created.body.id}/`;
      const replies = await Promise.all([
        call(h, 'DELETE', path, aliceKey),
        call(h, 'DELETE', path, aliceKey),
      ]);
      expect(replies.map((r) => r.status).sort()).toEqual([204, 404]);
    }
  });

  test('two users taking the same e-mail at once: one 200, the other 409 (or 400 if it saw it taken)', async () => {
    for (let i = 0; i < ROUNDS; i++) {
      const email = `taken${i}@race.test`;
      const replies = await Promise.all([
        call(h, 'PATCH', '/api/users/@me/', aliceKey, { email }),
        call(h, 'PATCH', '/api/users/@me/', adminKey, { email }),
      ]);
      const statuses = replies.map((r) => r.status).sort();
      expect(statuses[0]).toBe(200);
      expect([400, 409]).toContain(statuses[1]);
      const loser = replies.find((r) => r.status !== 200)!;
      expect(loser.body).toMatchObject({ type: 'validation_error', attr: 'email' });
      expect(await h.prisma.user.count({ where: { email } })).toBe(1);
    }
  });

  test('PATCH and DELETE of one user at once: never a 500', async () => {
    for (let i = 0; i < ROUNDS; i++) {
      const user = await h.prisma.user.create({
        data: { email: `victim${i}@a.test`, distinctId: `victim-${i}`, firstName: 'v' },
      });
      await h.prisma.organizationMembership.create({
        data: { organizationId: f.orgA.id, userId: user.id, level: 1 },
      });
      const path = `/api/users/${user.uuid}/`;
      const [patched, deleted] = await Promise.all([
        call(h, 'PATCH', path, staffKey, { first_name: 'w' }),
        call(h, 'DELETE', path, staffKey),
      ]);
      expect(deleted.status).toBe(204);
      expect([200, 404]).toContain(patched.status);
    }
  });
});

describe('caps on per-user state', () => {
  const hedgehog = '/api/users/@me/hedgehog_config/';
  const filler = (bytes: number) => 'x'.repeat(bytes);

  test('hedgehog_config: merges up to 16 KB, refuses a merge past it and keeps the stored value', async () => {
    expect((await call(h, 'PATCH', '/api/users/@me/', aliceKey, { hedgehog_config: null })).status).toBe(200);
    const first = await call(h, 'PATCH', hedgehog, aliceKey, { a: filler(10_000) });
    expect(first.status).toBe(200);
    const over = await call(h, 'PATCH', hedgehog, aliceKey, { b: filler(10_000) });
    expect(over.status).toBe(400);
    expect(over.body).toMatchObject({
      type: 'validation_error',
      code: 'max_length',
      attr: 'hedgehog_config',
    });
    expect(over.body.detail).toContain(String(MAX_HEDGEHOG_CONFIG_BYTES));
    const stored = await call(h, 'GET', hedgehog, aliceKey);
    expect(Object.keys(stored.body)).toEqual(['a']);
    // The hostile case: three 900 KB merges. Each is refused; /@me stays small.
    for (let i = 0; i < 3; i++) {
      const big = await call(h, 'PATCH', hedgehog, aliceKey, { [`k${i}`]: filler(900_000) });
      expect(big.status).toBe(400);
    }
    const me = await call(h, 'GET', '/api/users/@me/', aliceKey);
    expect(JSON.stringify(me.body).length).toBeLessThan(MAX_HEDGEHOG_CONFIG_BYTES + 8_000);
    // Replacing through the user PATCH is capped the same way, and a small value still works.
    const replace = await call(h, 'PATCH', '/api/users/@me/', aliceKey, {
      hedgehog_config: { z: filler(20_000) },
    });
    expect(replace.body).toMatchObject({ attr: 'hedgehog_config' });
    const ok = await call(h, 'PATCH', hedgehog, aliceKey, { b: 'small' });
    expect(ok.status).toBe(200);
    expect(Object.keys(ok.body).sort()).toEqual(['a', 'b']);
  });

  test('the other free-form user fields are capped at 64 KB', async () => {
    for (const field of ['notification_settings', 'events_column_config', 'has_seen_product_intro_for']) {
      const r = await call(h, 'PATCH', '/api/users/@me/', aliceKey, {
        [field]: { v: filler(MAX_USER_JSON_BYTES) },
      });
      expect({ field, status: r.status, attr: r.body.attr }).toEqual({ field, status: 400, attr: field });
    }
  });

  test('scene_personalisation: at most 100 scenes; replacing one still works', async () => {
    const scenes = '/api/users/@me/scene_personalisation/';
    await h.prisma.user.update({
      where: { id: f.alice.id },
      data: {
        scenePersonalisation: Array.from({ length: MAX_SCENE_PERSONALISATIONS - 1 }, (_, i) => ({
          scene: `s${i}`,
          dashboard: i + 1,
        })),
      },
    });
    expect((await call(h, 'POST', scenes, aliceKey, { scene: 'last', dashboard: 7 })).status).toBe(200);
    const over = await call(h, 'POST', scenes, aliceKey, { scene: 'one-too-many', dashboard: 7 });
    expect(over.status).toBe(400);
    expect(over.body).toMatchObject({ type: 'validation_error', code: 'max_entries', attr: 'scene' });
    const replaced = await call(h, 'POST', scenes, aliceKey, { scene: 's3', dashboard: 42 });
    expect(replaced.status).toBe(200);
    const row = await h.prisma.user.findUniqueOrThrow({ where: { id: f.alice.id } });
    const stored = row.scenePersonalisation as { scene: string; dashboard: number }[];
    expect(stored).toHaveLength(MAX_SCENE_PERSONALISATIONS);
    expect(stored.find((s) => s.scene === 's3')?.dashboard).toBe(42);
  });
});
