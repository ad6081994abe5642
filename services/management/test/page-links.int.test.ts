// Pagination links (`next`, `previous`) and the OpenAPI document's server URL are never built
// from what the client says about the host (Host, X-Forwarded-Host, X-Forwarded-Proto): with
// SETT_PUBLIC_URL they are absolute on it, without it they are relative to the server.
import http from 'node:http';
import { createKey, seed, startHarness, type Harness } from './helpers';

const SPOOFED = {
  host: 'evil.example',
  'x-forwarded-host': 'evil.example',
  'x-forwarded-proto': 'gopher',
};

/** A GET with a Host header of our choosing (fetch does not let a caller set Host). */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- response bodies are asserted on, not typed
function get(url: string, path: string, key: string): Promise<{ status: number; body: any }> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const req = http.request(
      { host: hostname, port, path, headers: { ...SPOOFED, authorization: `Bearer ${key}` } },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (d: Buffer) => chunks.push(d));
        res.on('end', () =>
          resolve({ status: res.statusCode!, body: JSON.parse(Buffer.concat(chunks).toString('utf8')) }),
        );
      },
    );
    req.on('error', reject);
    req.end();
  });
}

async function lists(h: Harness) {
  const f = await seed(h.prisma);
  const key = await createKey(h.prisma, f.alice.id, ['*']);
  for (let i = 0; i < 3; i++)
    await h.prisma.featureFlag.create({ data: { teamId: f.teamA.id, key: `f${i}`, filters: {} } });
  return {
    key,
    // The users list is served by management's fast path, the flags list by the Express routes.
    users: '/api/users/?limit=1',
    flags: `/api/projects/${f.teamA.id}/feature_flags/?limit=1&offset=1`,
    flagsPath: `/api/projects/${f.teamA.id}/feature_flags/`,
  };
}

describe('without SETT_PUBLIC_URL', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness();
  });
  afterAll(() => h?.stop());

  it('links are relative, whatever Host and X-Forwarded-* say', async () => {
    const l = await lists(h);
    const users = await get(h.url, l.users, l.key);
    expect(users.status).toBe(200);
    expect(users.body.next).toBe('/api/users/?limit=1&offset=1');
    const flags = await get(h.url, l.flags, l.key);
    expect(flags.status).toBe(200);
    expect(flags.body.next).toBe(`${l.flagsPath}?limit=1&offset=2`);
    expect(flags.body.previous).toBe(`${l.flagsPath}?limit=1`);
  });

  it('the OpenAPI document names no server taken from the request', async () => {
    const doc = await get(h.url, '/api/schema/', 'unused');
    expect(doc.status).toBe(200);
    expect(doc.body.servers).toBeUndefined();
  });
});

describe('with SETT_PUBLIC_URL', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ publicUrl: 'https://sett.example.com/' });
  });
  afterAll(() => h?.stop());

  it('links are absolute on the public URL, whatever Host and X-Forwarded-* say', async () => {
    const l = await lists(h);
    const users = await get(h.url, l.users, l.key);
    expect(users.body.next).toBe('https://sett.example.com/api/users/?limit=1&offset=1');
    const flags = await get(h.url, l.flags, l.key);
    expect(flags.body.next).toBe(`https://sett.example.com${l.flagsPath}?limit=1&offset=2`);
    const doc = await get(h.url, '/api/schema/', 'unused');
    expect(doc.body.servers).toEqual([{ url: 'https://sett.example.com' }]);
  });
});
