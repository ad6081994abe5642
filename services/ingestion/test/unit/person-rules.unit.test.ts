import {
  applyPropertyUpdate,
  isDistinctIdIllegal,
  mergePersonProperties,
  personIntentOf,
  propertyUpdateOf,
} from '../../src/persons/person-rules';

describe('property updates', () => {
  it('applies $set_once only to absent keys, $set always, $unset last', () => {
    const props: Record<string, unknown> = { a: 1, b: 2, gone: true };
    const changed = applyPropertyUpdate(
      props,
      propertyUpdateOf({ $set_once: { a: 9, c: 3 }, $set: { b: 20 }, $unset: ['gone'] }),
    );
    expect(changed).toBe(true);
    expect(props).toEqual({ a: 1, b: 20, c: 3 });
  });

  it('reports no change when the values are already there (deep equality)', () => {
    const props: Record<string, unknown> = { a: { x: [1, 2] }, b: 'v' };
    expect(
      applyPropertyUpdate(
        props,
        propertyUpdateOf({ $set: { a: { x: [1, 2] } }, $set_once: { b: 'other' }, $unset: ['nope'] }),
      ),
    ).toBe(false);
    expect(applyPropertyUpdate(props, propertyUpdateOf({ $set: { a: { x: [1, 3] } } }))).toBe(true);
  });

  it('stores a client key named __proto__ as a property, never as the prototype', () => {
    // As it arrives from Kafka: JSON.parse makes __proto__ an own property.
    const update = propertyUpdateOf(
      JSON.parse('{"$set":{"__proto__":{"polluted":1}},"$set_once":{"__proto__":2}}'),
    );
    const props: Record<string, unknown> = {};
    expect(applyPropertyUpdate(props, update)).toBe(true);
    expect(Object.getPrototypeOf(props)).toBe(Object.prototype);
    expect((props as { polluted?: unknown }).polluted).toBeUndefined();
    expect(JSON.parse(JSON.stringify(props))).toEqual(JSON.parse('{"__proto__":{"polluted":1}}'));
    expect(Object.keys(props)).toEqual(['__proto__']);
  });

  it('accepts $unset as an object and ignores non-object $set', () => {
    expect(propertyUpdateOf({ $unset: { a: null } })).toEqual({ set: {}, setOnce: {}, unset: ['a'] });
    expect(propertyUpdateOf({ $set: 'x', $set_once: [1] })).toBeNull();
  });

  it('merging keeps both sides: the target wins conflicts, the source fills gaps', () => {
    expect(
      mergePersonProperties({ email: 't@x', plan: 'pro' }, { email: 's@x', first_seen: '2020' }),
    ).toEqual({
      email: 't@x',
      plan: 'pro',
      first_seen: '2020',
    });
  });
});

describe('person intents', () => {
  it('$identify with $anon_distinct_id merges the anonymous person into the identified one', () => {
    expect(personIntentOf('$identify', 'user', { $anon_distinct_id: 'anon', $set: { e: 1 } })).toEqual({
      kind: 'merge',
      targetDistinctId: 'user',
      sourceDistinctId: 'anon',
      guardIdentified: true,
      update: { set: { e: 1 }, setOnce: {}, unset: [] },
    });
    expect(personIntentOf('$identify', 'user', { $set: { e: 1 } })).toMatchObject({
      kind: 'update',
      identify: true,
    });
  });

  it('$create_alias merges the distinct_id into the alias (docs/interface.md, Event kinds)', () => {
    expect(personIntentOf('$create_alias', 'd', { alias: 'main' })).toMatchObject({
      kind: 'merge',
      targetDistinctId: 'main',
      sourceDistinctId: 'd',
      guardIdentified: false,
    });
    expect(personIntentOf('$create_alias', 'd', { alias: 42 })).toMatchObject({ targetDistinctId: '42' });
  });

  it('never merges on illegal ids or on itself', () => {
    for (const id of ['null', 'undefined', 'Anonymous', ' ', '0', '[object Object]'])
      expect(isDistinctIdIllegal(id)).toBe(true);
    expect(isDistinctIdIllegal('user-1')).toBe(false);
    expect(personIntentOf('$identify', 'user', { $anon_distinct_id: 'null' }).kind).toBe('update');
    expect(personIntentOf('$create_alias', 'same', { alias: 'same' }).kind).toBe('update');
    expect(personIntentOf('$pageview', 'u', {})).toEqual({
      kind: 'update',
      distinctId: 'u',
      update: null,
      identify: false,
    });
  });
});
