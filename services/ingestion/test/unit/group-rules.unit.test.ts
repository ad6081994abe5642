import {
  foldGroupUpserts,
  groupColumns,
  groupIdentifyOf,
  nextGroupTypeIndex,
} from '../../src/groups/group-rules';

describe('group type indexes', () => {
  it('hands out the lowest free index, at most five', () => {
    expect(nextGroupTypeIndex(new Map())).toBe(0);
    expect(
      nextGroupTypeIndex(
        new Map([
          ['a', 0],
          ['b', 2],
        ]),
      ),
    ).toBe(1);
    const full = new Map(['a', 'b', 'c', 'd', 'e'].map((t, i) => [t, i] as [string, number]));
    expect(nextGroupTypeIndex(full)).toBeNull();
  });

  it('maps $groups onto group columns by index, ignoring unknown types', () => {
    const mapping = new Map([
      ['company', 0],
      ['project', 3],
    ]);
    expect(groupColumns(mapping, { $groups: { company: 'acme', project: 7, unknown: 'x' } })).toEqual([
      'acme',
      null,
      null,
      '7',
      null,
    ]);
    expect(groupColumns(mapping, { $groups: 'nope' })).toEqual([null, null, null, null, null]);
    expect(groupColumns(undefined, { $groups: { company: 'acme' } })).toEqual([null, null, null, null, null]);
  });

  it('reads $groupidentify', () => {
    expect(
      groupIdentifyOf('$groupidentify', {
        $group_type: 'company',
        $group_key: 'acme',
        $group_set: { size: 5 },
      }),
    ).toEqual({
      groupType: 'company',
      groupKey: 'acme',
      set: { size: 5 },
    });
    expect(groupIdentifyOf('$groupidentify', { $group_type: 'company' })).toBeNull();
    expect(groupIdentifyOf('$pageview', { $group_type: 'company', $group_key: 'a' })).toBeNull();
  });

  it('folds one batch into one upsert per group, later values winning, in a stable order', () => {
    expect(
      foldGroupUpserts([
        { teamId: 1, groupTypeIndex: 0, groupKey: 'b', set: { x: 1 } },
        { teamId: 1, groupTypeIndex: 0, groupKey: 'a', set: { x: 1, y: 1 } },
        { teamId: 1, groupTypeIndex: 0, groupKey: 'a', set: { x: 2 } },
      ]),
    ).toEqual([
      { teamId: 1, groupTypeIndex: 0, groupKey: 'a', set: { x: 2, y: 1 } },
      { teamId: 1, groupTypeIndex: 0, groupKey: 'b', set: { x: 1 } },
    ]);
  });
});
