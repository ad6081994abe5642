import {
  personKey,
  simulatePersonBatch,
  type LoadedPerson,
  type PersonEventInput,
} from '../../src/persons/person-batch';
import { personIntentOf } from '../../src/persons/person-rules';

const T = 1;
const ev = (
  event: string,
  distinctId: string,
  properties: Record<string, unknown> = {},
  timestamp = '2024-01-01T00:00:00.000Z',
): PersonEventInput => ({
  teamId: T,
  timestamp,
  intent: personIntentOf(event, distinctId, properties),
});
const uuids = () => {
  let n = 0;
  return () => `new-${++n}`;
};
const loadedPerson = (id: string, over: Partial<LoadedPerson> = {}): LoadedPerson => ({
  id,
  uuid: `uuid-${id}`,
  teamId: T,
  properties: {},
  isIdentified: false,
  version: 3,
  createdAt: '2023-01-01T00:00:00.000Z',
  ...over,
});

describe('simulatePersonBatch', () => {
  it('creates one person per new distinct id and applies $set / $set_once in order', () => {
    const { personUuids, plan } = simulatePersonBatch(
      [
        ev('a', 'd1', { $set: { x: 1 }, $set_once: { first: 1 } }),
        ev('b', 'd1', { $set: { x: 2 }, $set_once: { first: 2 } }),
        ev('c', 'd2'),
      ],
      new Map(),
      uuids(),
    );
    expect(personUuids).toEqual(['new-1', 'new-1', 'new-2']);
    expect(plan.creates.map((p) => [p.uuid, p.properties, p.version])).toEqual([
      ['new-1', { x: 2, first: 1 }, 0],
      ['new-2', {}, 0],
    ]);
    expect(plan.distinctIds.map((d) => [d.distinctId, d.person.uuid])).toEqual([
      ['d1', 'new-1'],
      ['d2', 'new-2'],
    ]);
    expect(plan.updates).toEqual([]);
  });

  it('updates a loaded person once per batch (one version bump) and skips unchanged ones', () => {
    const loaded = new Map([
      [personKey(T, 'd1'), loadedPerson('10', { properties: { x: 1 } })],
      [personKey(T, 'd2'), loadedPerson('11', { properties: { y: 1 } })],
    ]);
    const { plan } = simulatePersonBatch(
      [
        ev('a', 'd1', { $set: { x: 2 } }),
        ev('a', 'd1', { $set: { x: 3 } }),
        ev('a', 'd2', { $set: { y: 1 } }),
      ],
      loaded,
      uuids(),
    );
    expect(plan.updates.map((p) => [p.id, p.properties, p.version])).toEqual([['10', { x: 3 }, 4]]);
    expect(plan.creates).toEqual([]);
  });

  it('$identify merges an unidentified anonymous person into the identified one, keeping both sides', () => {
    const loaded = new Map([
      [
        personKey(T, 'anon'),
        loadedPerson('1', {
          properties: { plan: 'free', utm: 'g' },
          version: 7,
          createdAt: '2022-01-01T00:00:00.000Z',
        }),
      ],
      [
        personKey(T, 'user'),
        loadedPerson('2', { properties: { plan: 'pro' }, isIdentified: true, version: 2 }),
      ],
    ]);
    const { personUuids, plan } = simulatePersonBatch(
      [ev('$identify', 'user', { $anon_distinct_id: 'anon', $set: { email: 'u@x' } }), ev('later', 'anon')],
      loaded,
      uuids(),
    );
    expect(personUuids).toEqual(['uuid-2', 'uuid-2']);
    expect(plan.merges).toEqual([{ sourceId: '1', target: expect.objectContaining({ id: '2' }) }]);
    const [target] = plan.updates;
    expect(target).toMatchObject({
      id: '2',
      properties: { plan: 'pro', utm: 'g', email: 'u@x' },
      isIdentified: true,
      version: 8,
      createdAt: '2022-01-01T00:00:00.000Z',
    });
    expect(plan.mergeCount).toBe(1);
  });

  it('$identify does not merge an anonymous person that is already identified', () => {
    const loaded = new Map([
      [personKey(T, 'anon'), loadedPerson('1', { isIdentified: true })],
      [personKey(T, 'user'), loadedPerson('2', { isIdentified: true })],
    ]);
    const { plan } = simulatePersonBatch(
      [ev('$identify', 'user', { $anon_distinct_id: 'anon' })],
      loaded,
      uuids(),
    );
    expect(plan.merges).toEqual([]);
    expect(plan.refusedMerges).toBe(1);
  });

  it('$identify adds the missing side as a distinct id instead of creating a second person', () => {
    const loaded = new Map([[personKey(T, 'anon'), loadedPerson('1')]]);
    const { personUuids, plan } = simulatePersonBatch(
      [ev('$identify', 'user', { $anon_distinct_id: 'anon' })],
      loaded,
      uuids(),
    );
    expect(personUuids).toEqual(['uuid-1']);
    expect(plan.distinctIds.map((d) => [d.distinctId, d.person.id])).toEqual([['user', '1']]);
    expect(plan.updates[0]).toMatchObject({ id: '1', isIdentified: true, version: 4 });
  });

  it('neither side known: one new identified person with both distinct ids', () => {
    const { plan } = simulatePersonBatch(
      [ev('$identify', 'user', { $anon_distinct_id: 'anon' })],
      new Map(),
      uuids(),
    );
    expect(plan.creates).toHaveLength(1);
    expect(plan.creates[0]).toMatchObject({ isIdentified: true });
    expect(plan.distinctIds.map((d) => d.distinctId)).toEqual(['user', 'anon']);
  });

  it('$create_alias merges the distinct_id person into the alias person, which survives', () => {
    const { personUuids, plan } = simulatePersonBatch(
      [
        ev('e', 'main', { $set: { a: 1 } }),
        ev('e', 'other', { $set: { b: 2, a: 0 } }),
        ev('$create_alias', 'other', { alias: 'main' }),
        ev('e', 'other'),
      ],
      new Map(),
      uuids(),
    );
    expect(personUuids).toEqual(['new-1', 'new-2', 'new-1', 'new-1']);
    expect(plan.creates).toHaveLength(1);
    expect(plan.creates[0]).toMatchObject({ uuid: 'new-1', properties: { a: 1, b: 2 }, isIdentified: true });
    expect(plan.distinctIds.map((d) => [d.distinctId, d.person.uuid])).toEqual([
      ['main', 'new-1'],
      ['other', 'new-1'],
    ]);
  });

  it('chains of merges move every distinct id to the final survivor, versions stay monotonic', () => {
    const loaded = new Map([
      [personKey(T, 'a'), loadedPerson('1', { version: 9 })],
      [personKey(T, 'b'), loadedPerson('2', { version: 1 })],
      [personKey(T, 'c'), loadedPerson('3', { version: 1 })],
    ]);
    const { plan } = simulatePersonBatch(
      [ev('$create_alias', 'a', { alias: 'b' }), ev('$create_alias', 'b', { alias: 'c' })],
      loaded,
      uuids(),
    );
    expect(plan.merges.map((m) => [m.sourceId, m.target.id])).toEqual([
      ['1', '3'],
      ['2', '3'],
    ]);
    expect(plan.updates.map((p) => [p.id, p.version])).toEqual([['3', 11]]);
  });
});
