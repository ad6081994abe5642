// Unknown personal API keys cost management little: an unknown key is remembered for a few
// seconds (one query however often it is presented), and a client address that keeps presenting
// new unknown keys is throttled (429), as decide's local evaluation does, without a valid key
// ever being refused. Requests come from distinct loopback addresses (127.0.0.x), the address
// management really sees; what a client writes in X-Forwarded-For changes nothing.
import http from 'node:http';
import { randomUUID } from 'node:crypto';
import { UNKNOWN_KEY_LIMIT } from '@sett/keys';
import { createKey, seed, startHarness, type Harness } from './helpers';

let h: Harness;
let validKey: string;

beforeAll(async () => {
  h = await startHarness();
  const f = await seed(h.prisma);
  validKey = await createKey(h.prisma, f.alice.id, ['*']);
});

afterAll(() => h?.stop());

/** GET path from the loopback address `from`; `xff` as X-Forwarded-For. */
function get(from: string, path: string, key: string, xff?: string): Promise<number> {
  const { port } = new URL(h.url);
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: '127.0.0.1',
        port,
        localAddress: from,
        agent: false,
        path,
        headers: { authorization: `Bearer ${key}`, ...(xff ? { 'x-forwarded-for': xff } : {}) },
      },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode!));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

const unknownKey = () => `phx_${randomUUID().replace(/-/g, '')}unknown`;

/** Runs `work`, counting the queries management sends through its pg pool meanwhile. */
async function countQueries(work: () => Promise<unknown>): Promise<number> {
  const original = h.pool.query.bind(h.pool);
  let queries = 0;
  (h.pool as { query: unknown }).query = (...args: unknown[]) => {
    queries++;
    return (original as (...a: unknown[]) => unknown)(...args);
  };
  try {
    await work();
  } finally {
    (h.pool as { query: unknown }).query = original;
  }
  return queries;
}

describe('unknown personal API keys', () => {
  it('are looked up once, then remembered (the users fast path and the Express routes alike)', async () => {
    const key = unknownKey();
    const queries = await countQueries(async () => {
      for (let i = 0; i < 10; i++) {
        expect(await get('127.0.0.2', '/api/users/@me/', key)).toBe(401);
        expect(await get('127.0.0.2', '/api/projects/', key)).toBe(401);
      }
    });
    expect(queries).toBe(1);
  });

  it('are throttled per client address; rotating X-Forwarded-For does not dodge it', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < UNKNOWN_KEY_LIMIT + 5; i++)
      statuses.push(await get('127.0.0.3', '/api/projects/', unknownKey(), `198.51.100.${i}`));
    expect(statuses.slice(0, UNKNOWN_KEY_LIMIT)).toEqual(Array(UNKNOWN_KEY_LIMIT).fill(401));
    expect(statuses.slice(UNKNOWN_KEY_LIMIT)).toEqual(Array(5).fill(429));
    // Another address is not affected, whatever the throttled one wrote in the header.
    expect(await get('127.0.0.4', '/api/projects/', unknownKey(), '127.0.0.3')).toBe(401);
  });

  it('never lock out a valid key, even one presented from the throttled address', async () => {
    for (let i = 0; i <= UNKNOWN_KEY_LIMIT; i++) await get('127.0.0.5', '/api/projects/', unknownKey());
    expect(await get('127.0.0.5', '/api/projects/', unknownKey())).toBe(429);
    expect(await get('127.0.0.5', '/api/projects/', validKey)).toBe(200);
    expect(await get('127.0.0.5', '/api/users/@me/', validKey)).toBe(200);
  });
});
