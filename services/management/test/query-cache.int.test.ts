// The result cache of /query/ against real Redis: a repeated query is served from the cache with
// its first last_refresh, until ingestion bumps the project's data version (a batch stored for
// it); force_blocking always computes; force_cache never does (PostHog's cache-miss answer when
// there is nothing, a stale answer when that is all there is); another project's batch leaves
// this project's answers alone.
import { randomUUID } from 'node:crypto';
import { bumpQueryDataVersions } from '@sett/cache';
import { call, createKey, seed, startHarness, type Fixture, type Harness } from './helpers';

let h: Harness;
let f: Fixture;
let key: string;

const insert = (team: number) =>
  h.pool.query(
    `INSERT INTO events (uuid, team_id, event, distinct_id, timestamp, properties) VALUES ($1, $2, 'e', 'u', now() - interval '1 hour', '{}')`,
    [randomUUID(), team],
  );

beforeAll(async () => {
  h = await startHarness();
  f = await seed(h.prisma);
  key = await createKey(h.prisma, f.alice.id, ['query:read']);
  await insert(f.teamA.id);
});
afterAll(() => h.stop());

const total = (refresh?: unknown, event = 'e') =>
  call(h, 'POST', `/api/projects/${f.teamA.id}/query/`, key, {
    query: {
      kind: 'TrendsQuery',
      series: [{ kind: 'EventsNode', event }],
      dateRange: { date_from: '-2d' },
      trendsFilter: { display: 'BoldNumber' },
    },
    ...(refresh === undefined ? {} : { refresh }),
  });
const value = (res: { body: { results: Array<{ aggregated_value: number }> } }) =>
  res.body.results[0]!.aggregated_value;

it('serves a repeated query from the cache until a batch is stored for the project', async () => {
  const first = await total();
  expect(first.status).toBe(200);
  expect(first.body).toMatchObject({ is_cached: false, query_status: null });
  expect(first.body.cache_key).toMatch(/^[0-9a-f]{40}$/);
  expect(value(first)).toBe(1);

  const second = await total();
  expect(second.body).toMatchObject({
    is_cached: true,
    cache_key: first.body.cache_key,
    last_refresh: first.body.last_refresh,
  });
  expect(value(second)).toBe(1);

  // A new event, not yet announced by ingestion: the cached answer still stands.
  await insert(f.teamA.id);
  expect(value(await total())).toBe(1);
  // Another project's batch does not touch this project's answers.
  await bumpQueryDataVersions(h.redis, [f.teamB.id]);
  expect((await total()).body.is_cached).toBe(true);
  // This project's batch does.
  await bumpQueryDataVersions(h.redis, [f.teamA.id]);
  const fresh = await total();
  expect(fresh.body.is_cached).toBe(false);
  expect(value(fresh)).toBe(2);
});

it('force_blocking (and true) always computes; false blocks as blocking does', async () => {
  await total();
  expect((await total('force_blocking')).body.is_cached).toBe(false);
  expect((await total(true)).body.is_cached).toBe(false);
  expect((await total(false)).body.is_cached).toBe(true);
});

it("force_cache never computes: PostHog's cache-miss answer, or the cached answer however old", async () => {
  const miss = await total('force_cache', 'never-asked');
  expect(miss.status).toBe(200);
  expect(miss.body).toEqual({ cache_key: expect.stringMatching(/^[0-9a-f]{40}$/), query_status: null });
  const computed = await total('blocking', 'never-asked');
  expect(computed.body.cache_key).toBe(miss.body.cache_key);
  await bumpQueryDataVersions(h.redis, [f.teamA.id]);
  const stale = await total('force_cache', 'never-asked');
  expect(stale.body).toMatchObject({ is_cached: true, last_refresh: computed.body.last_refresh });
});

it('refuses a refresh mode PostHog does not have', async () => {
  const res = await total('sometimes');
  expect(res).toMatchObject({ status: 400, body: { attr: 'refresh' } });
});
