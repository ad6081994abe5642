// Cohort-targeted and dependent flags through decide over real HTTP, Postgres and Redis:
// property cohorts (request properties first, stored otherwise), static cohorts by membership
// of any of the person's distinct ids (batched, cheap with a 100k-member cohort), flags on other
// flags' variants, the cohort list read with the flag list (Redis, else Postgres written back),
// and local evaluation's `cohorts` map and `dependency_chain`.
import { redisKeys, writeCohortList, writeFlagList, writeProjectToken } from '@sett/cache';
import { generateProjectSecretKey, hashProjectSecretKey } from '@sett/keys';
import { randomUUID } from 'node:crypto';
import {
  createProject,
  insertFlag,
  insertPerson,
  post,
  startHarness,
  type Harness,
  type Project,
} from './support';

jest.setTimeout(60_000);

let h: Harness;
let p: Project;
const secret = generateProjectSecretKey();
const ids: Record<string, number> = {};

async function insertCohort(
  teamId: number,
  name: string,
  filters: unknown,
  isStatic = false,
): Promise<number> {
  const { rows } = await h.pool.query<{ id: number }>(
    'INSERT INTO cohorts (team_id, name, filters, is_static) VALUES ($1, $2, $3, $4) RETURNING id',
    [teamId, name, JSON.stringify(filters), isStatic],
  );
  return rows[0]!.id;
}

const inCohort = (id: number, operator = 'in') => ({ key: 'id', type: 'cohort', value: id, operator });
const onProps = (...properties: unknown[]) => ({ groups: [{ properties, rollout_percentage: 100 }] });

beforeAll(async () => {
  h = await startHarness();
  p = await createProject(h);
  await h.pool.query('UPDATE teams SET secret_api_token_hash = $1 WHERE id = $2', [
    hashProjectSecretKey(secret),
    p.teamId,
  ]);
  ids.pro = await insertCohort(p.teamId, 'Pro, not French', {
    properties: {
      type: 'OR',
      values: [
        {
          type: 'AND',
          values: [
            { key: 'plan', type: 'person', value: 'pro', operator: 'exact', negation: false },
            { key: 'country', type: 'person', value: 'FR', operator: 'exact', negation: true },
          ],
        },
      ],
    },
  });
  ids.beta = await insertCohort(p.teamId, 'Beta testers', {}, true);
  ids.big = await insertCohort(p.teamId, 'Big list', {}, true);
  ids.nested = await insertCohort(p.teamId, 'Pro and beta', {
    properties: { type: 'AND', values: [{ type: 'AND', values: [inCohort(ids.pro), inCohort(ids.beta)] }] },
  });
  // The person behind "alias-1" is a member through their other distinct id.
  await insertPerson(h.pool, p.teamId, ['user-1', 'alias-1'], { plan: 'pro' });
  await insertPerson(h.pool, p.teamId, ['user-2'], { plan: 'free' });
  await h.pool.query(
    `INSERT INTO cohort_members (cohort_id, team_id, distinct_id) VALUES ($1, $2, 'user-1'), ($1, $2, 'no-person-yet')`,
    [ids.beta, p.teamId],
  );
  await h.pool.query(
    `INSERT INTO cohort_members (cohort_id, team_id, distinct_id)
     SELECT $1, $2, 'member-' || n FROM generate_series(1, 100000) n`,
    [ids.big, p.teamId],
  );
  await h.pool.query('ANALYZE cohort_members');
  ids.proFlag = await insertFlag(h.pool, p.teamId, {
    key: 'pro-cohort',
    filters: onProps(inCohort(ids.pro)),
  });
  await insertFlag(h.pool, p.teamId, { key: 'not-pro', filters: onProps(inCohort(ids.pro, 'not_in')) });
  ids.betaStatic = await insertFlag(h.pool, p.teamId, {
    key: 'beta-static',
    filters: onProps(inCohort(ids.beta)),
  });
  await insertFlag(h.pool, p.teamId, { key: 'big-static', filters: onProps(inCohort(ids.big)) });
  await insertFlag(h.pool, p.teamId, { key: 'nested', filters: onProps(inCohort(ids.nested)) });
  ids.experiment = await insertFlag(h.pool, p.teamId, {
    key: 'experiment',
    filters: {
      groups: [{ properties: [inCohort(ids.pro)], rollout_percentage: 100, variant: 'test' }],
      multivariate: {
        variants: [
          { key: 'control', rollout_percentage: 50 },
          { key: 'test', rollout_percentage: 50 },
        ],
      },
    },
  });
  await insertFlag(h.pool, p.teamId, {
    key: 'on-beta-static',
    filters: onProps({
      key: String(ids.betaStatic),
      type: 'flag',
      value: true,
      operator: 'flag_evaluates_to',
    }),
  });
  await insertFlag(h.pool, p.teamId, {
    key: 'on-test-variant',
    filters: onProps({
      key: String(ids.experiment),
      type: 'flag',
      value: 'test',
      operator: 'flag_evaluates_to',
    }),
  });
});

afterAll(async () => {
  await h?.stop();
});

const flags = (distinctId: string, extra: Record<string, unknown> = {}) =>
  post(h.url, '/flags/?v=2', { api_key: p.token, distinct_id: distinctId, ...extra });
const enabled = (
  body: Record<string, any>, // eslint-disable-line @typescript-eslint/no-explicit-any
) => Object.fromEntries(Object.entries(body.flags).map(([k, v]) => [k, (v as { enabled: boolean }).enabled]));

describe('flags on cohorts and on other flags', () => {
  it('loads the cohorts from Postgres with the flags and writes the cohort list back to Redis', async () => {
    const res = await flags('user-1');
    expect(res.status).toBe(200);
    expect(res.body.errorsWhileComputingFlags).toBe(false);
    const list = JSON.parse((await h.redis.get(redisKeys.cohorts(p.teamId)))!);
    expect(list.cohorts.map((c: { id: number }) => c.id).sort()).toEqual(
      [ids.pro, ids.beta, ids.big, ids.nested].sort(),
    );
  });

  it('stored properties, static membership through another distinct id, cohorts in cohorts, dependencies', async () => {
    const res = await flags('alias-1');
    expect(res.body.errorsWhileComputingFlags).toBe(false);
    expect(enabled(res.body)).toEqual({
      'pro-cohort': true,
      'not-pro': false,
      'beta-static': true,
      'big-static': false,
      nested: true,
      experiment: true,
      'on-test-variant': true,
      'on-beta-static': true,
    });
    expect(res.body.flags.experiment.variant).toBe('test');
  });

  it('request person_properties win over stored ones', async () => {
    const res = await flags('user-1', { person_properties: { country: 'FR' } });
    expect(res.body.errorsWhileComputingFlags).toBe(false);
    expect(enabled(res.body)).toMatchObject({
      'pro-cohort': false,
      'not-pro': true,
      nested: false,
      'on-test-variant': false,
    });
  });

  it('flag_keys_to_evaluate naming a dependent flag evaluates its dependency without answering it', async () => {
    const res = await flags('user-1', { flag_keys_to_evaluate: ['on-test-variant'] });
    expect(res.body.errorsWhileComputingFlags).toBe(false);
    expect(enabled(res.body)).toEqual({ 'on-test-variant': true });
  });

  it('flag_keys naming a flag that depends on a static-cohort flag looks the membership up', async () => {
    // Only the dependency uses the static cohort: the lookup must follow the dependency.
    const member = await flags('no-person-yet', { flag_keys: ['on-beta-static'] });
    expect(member.body.errorsWhileComputingFlags).toBe(false);
    expect(enabled(member.body)).toEqual({ 'on-beta-static': true });
    const stranger = await flags('nobody-at-all', { flag_keys: ['on-beta-static'] });
    expect(enabled(stranger.body)).toEqual({ 'on-beta-static': false });
  });

  it('a distinct id with no person is matched by its own membership', async () => {
    const res = await flags('no-person-yet');
    expect(res.body.errorsWhileComputingFlags).toBe(false);
    expect(enabled(res.body)).toMatchObject({
      'beta-static': true,
      'pro-cohort': false,
      'big-static': false,
    });
  });

  it('a member of a 100k-member cohort, in one batched query per turn for concurrent requests', async () => {
    const before = h.decide.personStore.stats().cohortQueries;
    const started = performance.now();
    const replies = await Promise.all(Array.from({ length: 20 }, (_, i) => flags(`member-${i * 5000 + 1}`)));
    const ms = performance.now() - started;
    for (const res of replies) {
      expect(res.body.errorsWhileComputingFlags).toBe(false);
      expect(res.body.flags['big-static'].enabled).toBe(true);
    }
    expect(h.decide.personStore.stats().cohortQueries - before).toBeLessThanOrEqual(20);
    expect(ms).toBeLessThan(5_000);
    // Lookups of one event-loop turn share one query per project.
    const batchBefore = h.decide.personStore.stats().cohortQueries;
    const sets = await Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        h.decide.personStore.staticCohorts(p.teamId, `member-${i + 70000}`),
      ),
    );
    expect(h.decide.personStore.stats().cohortQueries - batchBefore).toBe(1);
    for (const set of sets) expect([...set]).toEqual([ids.big]);
    const plan = await h.pool.query(
      `EXPLAIN SELECT cohort_id FROM cohort_members WHERE team_id = $1 AND distinct_id = ANY($2::text[])`,
      [p.teamId, ['member-1']],
    );
    expect(plan.rows.map((r: Record<string, string>) => r['QUERY PLAN']).join('\n')).toMatch(/Index/);
  });
});

describe('the cohort list in Redis', () => {
  it('is read with the flag list; a change of it reaches decide', async () => {
    const teamId = p.teamId + 100_000;
    const token = `phc_${randomUUID().replace(/-/g, '')}`;
    await writeProjectToken(h.redis, token, { teamId, organizationId: p.organizationId });
    await h.redis.set(redisKeys.groupTypes(teamId), '{}');
    await writeFlagList(h.redis, {
      teamId,
      updatedAt: Date.now(),
      flags: [{ id: 1, team_id: teamId, key: 'vip', filters: onProps(inCohort(7)), active: true }],
    });
    const cohort = (value: string) => ({
      id: 7,
      name: 'VIP',
      is_static: false,
      version: 1,
      filters: {
        properties: { type: 'AND', values: [{ key: 'tier', type: 'person', value, operator: 'exact' }] },
      },
    });
    await writeCohortList(h.redis, { teamId, updatedAt: Date.now(), cohorts: [cohort('gold')] });
    const ask = () =>
      post(h.url, '/flags/?v=2', { api_key: token, distinct_id: 'x', person_properties: { tier: 'gold' } });
    expect((await ask()).body.flags.vip.enabled).toBe(true);
    await writeCohortList(h.redis, { teamId, updatedAt: Date.now(), cohorts: [cohort('silver')] });
    expect((await ask()).body.flags.vip.enabled).toBe(false);
    // A deleted cohort: the flag cannot be computed, as in PostHog.
    await writeCohortList(h.redis, { teamId, updatedAt: Date.now(), cohorts: [] });
    const gone = await ask();
    expect(gone.body.errorsWhileComputingFlags).toBe(true);
    expect(gone.body.flags.vip).toBeUndefined();
  });
});

describe('local evaluation', () => {
  const get = async (extra: string, headers: Record<string, string> = {}) => {
    const res = await fetch(`${h.url}/flags/definitions?token=${p.token}${extra}`, {
      headers: { authorization: `Bearer ${secret}`, ...headers },
    });
    return {
      status: res.status,
      etag: res.headers.get('etag'),
      // eslint-disable-next-line @typescript-eslint/no-explicit-any
      body: (res.status === 200 ? await res.json() : {}) as Record<string, any>,
    };
  };

  it('sends the property cohorts flags use, leaves static ones out, and dependency chains', async () => {
    const res = await get('&send_cohorts');
    expect(res.status).toBe(200);
    expect(Object.keys(res.body.cohorts).sort()).toEqual([String(ids.pro), String(ids.nested)].sort());
    expect(res.body.cohorts[String(ids.pro)].type).toBe('OR');
    const dependent = res.body.flags.find((f: { key: string }) => f.key === 'on-test-variant');
    expect(dependent.filters.groups[0].properties[0]).toMatchObject({
      key: 'experiment',
      type: 'flag',
      value: 'test',
      dependency_chain: ['experiment'],
    });
    expect((await get('')).body.cohorts).toEqual({});
  });

  it('gets a new ETag when a cohort changes', async () => {
    const first = await get('&send_cohorts');
    await h.pool.query(
      `UPDATE cohorts SET name = 'renamed', version = version + 1, filters = $2 WHERE id = $1`,
      [
        ids.pro,
        JSON.stringify({
          properties: { type: 'AND', values: [{ key: 'plan', type: 'person', value: 'pro' }] },
        }),
      ],
    );
    await h.redis.del(redisKeys.cohorts(p.teamId));
    const second = await get('&send_cohorts', { 'if-none-match': first.etag! });
    expect(second.status).toBe(200);
    expect(second.etag).not.toBe(first.etag);
    expect(second.body.cohorts[String(ids.pro)].type).toBe('AND');
  });
});
