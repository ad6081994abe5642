// Keys named like Object.prototype members in management input: a flag keyed `__proto__` is a
// flag like any other (stored, listed, served), and a `__proto__` key in free-form JSON that
// is not kept is not echoed back either.
import { call, createKey, seed, startHarness, type Fixture, type Harness } from './helpers';

let h: Harness;
let f: Fixture;
let key: string;

beforeAll(async () => {
  h = await startHarness();
  f = await seed(h.prisma);
  key = await createKey(h.prisma, f.alice.id, ['*']);
});

afterAll(async () => {
  await h?.stop();
});

describe('hedgehog_config', () => {
  it('answers a PATCH with exactly what it stored: a `__proto__` key is dropped', async () => {
    const raw = '{"color":"green","__proto__":{"polluted":true},"nested":{"__proto__":{"x":1},"y":2}}';
    const res = await fetch(`${h.url}/api/users/@me/hedgehog_config/`, {
      method: 'PATCH',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: raw,
    });
    expect(res.status).toBe(200);
    const echoed = JSON.parse(await res.text()) as Record<string, unknown>;
    const stored = (await call(h, 'GET', '/api/users/@me/hedgehog_config/', key)).body as Record<
      string,
      unknown
    >;
    expect(Object.keys(echoed).sort()).toEqual(['color', 'nested']);
    expect(echoed).toEqual(stored);
    expect(Object.keys(stored.nested as object)).toEqual(['y']);
    const row = await h.prisma.user.findUniqueOrThrow({ where: { id: f.alice.id } });
    expect(row.hedgehogConfig).toEqual(stored);
  });
});

describe('flags keyed like Object.prototype members', () => {
  it('are created, listed and read back like any other flag', async () => {
    const base = `/api/projects/${f.teamA.id}/feature_flags/`;
    for (const flagKey of ['__proto__', 'constructor', 'toString']) {
      const created = await call(h, 'POST', base, key, {
        key: flagKey,
        filters: { groups: [{ rollout_percentage: 100 }] },
      });
      expect(created.status).toBe(201);
      expect(created.body.key).toBe(flagKey);
      const one = await call(h, 'GET', `${base}${created.body.id}/`, key);
      expect(one.body.key).toBe(flagKey);
    }
    const list = await call(h, 'GET', base, key);
    expect((list.body.results as { key: string }[]).map((r) => r.key).sort()).toEqual(
      ['__proto__', 'constructor', 'toString'].sort(),
    );
  });
});
