// Stored person lookups against real Postgres: concurrent lookups share one query, a distinct
// id without a person is remembered (no query the next time), answers are per distinct id.
import { createPersonStore } from '../src/persons/person-store';
import { createProject, insertPerson, startHarness, type Harness } from './support';

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => {
  await h?.stop();
});

describe('person store', () => {
  it('batches concurrent lookups into one query and caches the ones that found nobody', async () => {
    const project = await createProject(h);
    const other = await createProject(h);
    await insertPerson(h.pool, project.teamId, ['alice', 'alice-anon'], { plan: 'pro' });
    await insertPerson(h.pool, project.teamId, ['bob'], { plan: 'free' });
    await insertPerson(h.pool, other.teamId, ['carol'], { plan: 'other' });
    const store = createPersonStore({ pool: h.pool, ttlMs: 60_000 });

    const ids = ['alice', 'bob', 'nobody-1', 'alice-anon', 'carol', 'alice'];
    const found = await Promise.all(ids.map((id) => store.person(project.teamId, id)));
    expect(found.map((p) => p?.properties.plan ?? null)).toEqual(['pro', 'free', null, 'pro', null, 'pro']);
    expect(found[0]!.personId).toBe(found[3]!.personId);
    expect(store.stats()).toMatchObject({ personQueries: 1, personBatches: 1 });

    // Cached, the unknown id included.
    await Promise.all(ids.map((id) => store.person(project.teamId, id)));
    expect(store.stats().personQueries).toBe(1);
    // Another project is another query, and sees its own person.
    expect((await store.person(other.teamId, 'carol'))?.properties).toEqual({ plan: 'other' });
    expect(store.stats().personQueries).toBe(2);
  });

  it('without a cache TTL, still answers each lookup from its batch', async () => {
    const project = await createProject(h);
    await insertPerson(h.pool, project.teamId, ['dave'], { n: 1 });
    const store = createPersonStore({ pool: h.pool, ttlMs: 0 });
    const [dave, none] = await Promise.all([
      store.person(project.teamId, 'dave'),
      store.person(project.teamId, 'none'),
    ]);
    expect(dave?.properties).toEqual({ n: 1 });
    expect(none).toBeNull();
  });
});
