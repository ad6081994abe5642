// Local evaluation's unknown-key throttle against real sockets from distinct loopback addresses
// (127.0.0.x: the address decide sees is the one each request really came from): a client
// cannot dodge it by writing X-Forwarded-For, cannot aim it at another address by writing that
// address there, and the misses of an address never refuse a valid key, even one presented
// from that same address.
import http from 'node:http';
import { randomUUID } from 'node:crypto';
import { generateKeyId, generatePersonalApiKey, hashPersonalApiKey } from '@sett/keys';
import { UNKNOWN_KEY_LIMIT } from '@sett/keys';
import { createProject, startHarness, type Harness, type Project } from './support';

let h: Harness;
let project: Project;
let validKey: string;

beforeAll(async () => {
  h = await startHarness();
  project = await createProject(h);
  const { rows } = await h.pool.query<{ id: number }>(
    `INSERT INTO users (uuid, distinct_id, email) VALUES (gen_random_uuid(), $1, $2) RETURNING id`,
    [randomUUID(), `${randomUUID()}@example.test`],
  );
  await h.pool.query(
    'INSERT INTO organization_memberships (id, organization_id, user_id) VALUES (gen_random_uuid(), $1, $2)',
    [project.organizationId, rows[0]!.id],
  );
  validKey = generatePersonalApiKey();
  await h.pool.query(
    `INSERT INTO personal_api_keys (id, user_id, label, secure_value, mask_value, scopes)
     VALUES ($1, $2, 'test', $3, 'phx_...', '{feature_flag:read}')`,
    [generateKeyId(), rows[0]!.id, hashPersonalApiKey(validKey)],
  );
});

afterAll(async () => {
  await h?.stop();
});

/** GET the flag definitions from the loopback address `from`, with `xff` as X-Forwarded-For. */
function definitions(
  from: string,
  key: string,
  xff?: string,
): Promise<{ status: number; retryAfter?: string }> {
  const { port } = new URL(h.url);
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: '127.0.0.1',
        port,
        localAddress: from,
        agent: false,
        path: `/api/feature_flag/local_evaluation/?token=${project.token}`,
        headers: { authorization: `Bearer ${key}`, ...(xff ? { 'x-forwarded-for': xff } : {}) },
      },
      (res) => {
        res.resume();
        res.on('end', () =>
          resolve({ status: res.statusCode!, retryAfter: res.headers['retry-after'] as string | undefined }),
        );
      },
    );
    req.on('error', reject);
    req.end();
  });
}

const unknownKey = () => `phx_${randomUUID().replace(/-/g, '')}unknown`;

describe('the unknown-key throttle of local evaluation', () => {
  it('cannot be dodged by rotating X-Forwarded-For', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < UNKNOWN_KEY_LIMIT + 5; i++)
      statuses.push((await definitions('127.0.0.2', unknownKey(), `198.51.100.${i}`)).status);
    expect(statuses.slice(0, UNKNOWN_KEY_LIMIT)).toEqual(Array(UNKNOWN_KEY_LIMIT).fill(401));
    expect(statuses.slice(UNKNOWN_KEY_LIMIT)).toEqual(Array(5).fill(429));
  });

  it('cannot be aimed at another address by naming it in X-Forwarded-For', async () => {
    for (let i = 0; i <= UNKNOWN_KEY_LIMIT; i++) await definitions('127.0.0.3', unknownKey(), '203.0.113.77');
    // The victim, whose real address the attacker wrote, is untouched: its valid key is served
    // and an unknown key is a plain 401.
    expect((await definitions('127.0.0.4', validKey, '203.0.113.77')).status).toBe(200);
    expect((await definitions('127.0.0.4', unknownKey(), '203.0.113.77')).status).toBe(401);
  });

  it('never refuses a valid key, even from the address that made the misses', async () => {
    for (let i = 0; i <= UNKNOWN_KEY_LIMIT; i++) await definitions('127.0.0.5', unknownKey());
    const refused = await definitions('127.0.0.5', unknownKey());
    expect(refused).toEqual({ status: 429, retryAfter: expect.stringMatching(/^\d+$/) });
    expect((await definitions('127.0.0.5', validKey)).status).toBe(200);
  });
});
