// Decide with Redis unreachable (a client pointed at a closed port): tokens, flag lists and
// stored properties come from Postgres, quota fails open, and nothing is a 500.
import net from 'node:net';
import { createProject, insertFlag, insertPerson, post, startHarness, type Harness } from './support';

async function closedPort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const port = (server.address() as net.AddressInfo).port;
  await new Promise<void>((r) => server.close(() => r()));
  return port;
}

let h: Harness;

beforeAll(async () => {
  h = await startHarness({ redisUrl: `redis://127.0.0.1:${await closedPort()}` });
});

afterAll(async () => {
  await h?.stop();
});

it('evaluates flags from Postgres when Redis is down', async () => {
  const p = await createProject(h, { quota: 0 });
  await insertFlag(h.pool, p.teamId, { key: 'rollout', filters: { groups: [{ rollout_percentage: 100 }] } });
  await insertFlag(h.pool, p.teamId, {
    key: 'pro',
    filters: {
      groups: [{ properties: [{ key: 'plan', type: 'person', value: 'pro' }], rollout_percentage: 100 }],
    },
  });
  await insertPerson(h.pool, p.teamId, ['down-1'], { plan: 'pro' });
  for (let i = 0; i < 3; i++) {
    const res = await post(h.url, '/decide/?v=4', { api_key: p.token, distinct_id: 'down-1' });
    expect(res.status).toBe(200);
    expect(res.body.errorsWhileComputingFlags).toBe(false);
    // quota 0 would limit, but usage cannot be counted without Redis: fail open
    expect(res.body).not.toHaveProperty('quotaLimited');
    expect(res.body.flags.rollout.enabled).toBe(true);
    expect(res.body.flags.pro.enabled).toBe(true);
  }
  const unknown = await post(h.url, '/decide/?v=4', { api_key: 'phc_nope', distinct_id: 'x' });
  expect(unknown.status).toBe(401);
  const metrics = await (await fetch(`${h.url}/_metrics`)).text();
  expect(metrics).toMatch(/decide_redis_failures_total\{service="decide"\} [1-9]/);
  expect(metrics).toMatch(/decide_flag_definitions_total\{source="postgres",service="decide"\} [1-9]/);
});

it('reports errorsWhileComputingFlags, not a 500, when stored properties cannot be read', async () => {
  const p = await createProject(h);
  await insertFlag(h.pool, p.teamId, { key: 'plain', filters: { groups: [{ rollout_percentage: 100 }] } });
  await insertFlag(h.pool, p.teamId, {
    key: 'needs-person',
    filters: {
      groups: [{ properties: [{ key: 'plan', type: 'person', value: 'pro' }], rollout_percentage: 100 }],
    },
  });
  // Warm the token and flag caches, then break the person read by renaming the table.
  const cached = await startHarness({
    db: h.db,
    redisUrl: `redis://127.0.0.1:${h.redis.options.port}`,
    config: { flagCacheTtlMs: 60_000, tokenCacheTtlMs: 60_000 },
  });
  try {
    expect(
      (
        await post(cached.url, '/decide/?v=4', {
          api_key: p.token,
          distinct_id: 'z',
          person_properties: { plan: 'pro' },
        })
      ).status,
    ).toBe(200);
    await h.pool.query('ALTER TABLE persons RENAME TO persons_away');
    try {
      const res = await post(cached.url, '/decide/?v=4', { api_key: p.token, distinct_id: 'z' });
      expect(res.status).toBe(200);
      expect(res.body.errorsWhileComputingFlags).toBe(true);
      expect(Object.keys(res.body.flags)).toEqual(['plain']);
      // the request gives the property: no read needed, nothing left out
      const given = await post(cached.url, '/decide/?v=4', {
        api_key: p.token,
        distinct_id: 'z',
        person_properties: { plan: 'pro' },
      });
      expect(given.body).toMatchObject({
        errorsWhileComputingFlags: false,
        flags: { plain: { enabled: true }, 'needs-person': { enabled: true } },
      });
    } finally {
      await h.pool.query('ALTER TABLE persons_away RENAME TO persons');
    }
  } finally {
    await cached.stop();
  }
});
