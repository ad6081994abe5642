// Regressions found by the hostile sweep of the accounts and persons endpoints
// (packages/hostile/src/accounts-corpus.ts): answers that were 4xx but did not say what was
// wrong, and concurrent duplicates that got a different answer than sequential ones.
import { redisKeys } from '@sett/cache';
import { generateKeyId } from '@sett/keys';
import { call, createKey, seed, startHarness, type Fixture, type Harness } from './helpers';

let h: Harness;
let f: Fixture;
let adminKey: string;

beforeAll(async () => {
  h = await startHarness();
  f = await seed(h.prisma);
  adminKey = await createKey(h.prisma, f.adminA.id, ['*']);
});
afterAll(() => h.stop());

const URN = (uuid: string) => `urn:uuid:${uuid}`;

test('a urn:uuid: id (valid for ajv-formats, not for Postgres) is a 400 naming the field', async () => {
  const bulk = await call(h, 'POST', `/api/projects/${f.teamA.id}/persons/bulk_delete/`, adminKey, {
    ids: [URN('00000000-0000-0000-0000-000000000000')],
  });
  expect(bulk.status).toBe(400);
  expect(bulk.body).toMatchObject({ attr: 'ids.0', detail: 'ids.0 must match format "uuid".' });

  const project = await call(h, 'POST', '/api/projects/', adminKey, {
    name: 'p',
    organization: URN(f.orgA.id),
  });
  expect(project.status).toBe(400);
  expect(project.body).toMatchObject({
    attr: 'organization',
    detail: 'organization must match format "uuid".',
  });

  const user = await call(h, 'PATCH', `/api/users/${f.adminA.uuid}/`, adminKey, {
    set_current_organization: URN(f.orgA.id),
  });
  expect(user.status).toBe(400);
  expect(user.body).toMatchObject({ attr: 'set_current_organization' });

  // Upper-case uuids are still uuids.
  const upper = await call(h, 'POST', '/api/projects/', adminKey, {
    name: 'upper',
    organization: f.orgA.id.toUpperCase(),
  });
  expect(upper.status).toBe(201);
});

test('the same user added by concurrent requests: one 201, the others the duplicate 400', async () => {
  const email = `racer-${generateKeyId()}@a.test`.toLowerCase();
  await h.prisma.user.create({ data: { email, distinctId: generateKeyId(), firstName: 'racer' } });
  const replies = await Promise.all(
    Array.from({ length: 6 }, () =>
      call(h, 'POST', `/api/organizations/${f.orgA.id}/members/`, adminKey, { email }),
    ),
  );
  const statuses = replies.map((r) => r.status).sort();
  expect(statuses).toEqual([201, 400, 400, 400, 400, 400]);
  for (const r of replies.filter((r) => r.status === 400))
    expect(r.body).toMatchObject({
      code: 'unique',
      attr: 'email',
      detail: 'This user is already a member of the organization.',
    });
});

describe('concurrent reset_token and DELETE leave no superseded token in Redis', () => {
  const newProject = async (name: string) =>
    h.prisma.team.create({ data: { organizationId: f.orgA.id, name, apiToken: `phc_${generateKeyId()}` } });
  const cached = async (token: string) => h.redis.get(redisKeys.token(token));

  test('reset_token sent several times at once', async () => {
    const team = await newProject('reset race');
    const replies = await Promise.all(
      Array.from({ length: 4 }, () => call(h, 'PATCH', `/api/projects/${team.id}/reset_token/`, adminKey)),
    );
    expect(replies.map((r) => r.status)).toEqual([200, 200, 200, 200]);
    const current = (await h.prisma.team.findUniqueOrThrow({ where: { id: team.id } })).apiToken;
    const stale = [team.apiToken, ...replies.map((r) => r.body.api_token as string)].filter(
      (t) => t !== current,
    );
    const live = (await Promise.all(stale.map(async (t) => ((await cached(t)) ? t : null)))).filter(Boolean);
    expect(live).toEqual([]);
  });

  test('reset_token at the same time as DELETE', async () => {
    const team = await newProject('delete race');
    const replies = await Promise.all([
      call(h, 'PATCH', `/api/projects/${team.id}/reset_token/`, adminKey),
      call(h, 'DELETE', `/api/projects/${team.id}/`, adminKey),
      call(h, 'POST', `/api/projects/${team.id}/reset_token/`, adminKey),
    ]);
    const row = await h.prisma.team.findUniqueOrThrow({ where: { id: team.id } });
    expect(row.deletedAt).not.toBeNull();
    const tokens = [
      team.apiToken,
      row.apiToken,
      ...replies.map((r) => r.body?.api_token as string | undefined),
    ];
    const live = (
      await Promise.all(
        tokens.filter((t): t is string => !!t).map(async (t) => ((await cached(t)) ? t : null)),
      )
    ).filter(Boolean);
    expect(live).toEqual([]);
  });
});
