import { prepareProjectFlags, toFlagDefinition } from '../src/flags/flag-definitions';

describe('toFlagDefinition', () => {
  it('accepts snake_case and camelCase writers and JSON-text filters', () => {
    const snake = toFlagDefinition(
      { id: 1, key: 'a', filters: { groups: [] }, ensure_experience_continuity: true, version: 3 },
      7,
    );
    const camel = toFlagDefinition(
      { id: '2', teamId: 7, key: 'b', filters: '{"groups":[]}', ensureExperienceContinuity: true },
      7,
    );
    expect(snake).toMatchObject({
      id: 1,
      team_id: 7,
      key: 'a',
      active: true,
      deleted: false,
      ensure_experience_continuity: true,
      version: 3,
    });
    expect(camel).toMatchObject({
      id: 2,
      key: 'b',
      filters: { groups: [] },
      ensure_experience_continuity: true,
      version: 1,
    });
    expect(toFlagDefinition({ id: 3 }, 7)).toBeUndefined();
  });
});

describe('prepareProjectFlags', () => {
  it('keeps live flags and precomputes what they read', () => {
    const project = prepareProjectFlags(
      1,
      [
        {
          id: 1,
          key: 'person',
          filters: { groups: [{ properties: [{ key: 'email', type: 'person', value: 'x' }] }] },
        },
        {
          id: 2,
          key: 'group',
          filters: {
            aggregation_group_type_index: 0,
            groups: [{ properties: [{ key: 'plan', type: 'group', group_type_index: 0, value: 'x' }] }],
          },
        },
        { id: 3, key: 'off', active: false, filters: {} },
        { id: 4, key: 'gone', deleted: true, filters: {} },
        {
          id: 5,
          key: 'cont',
          ensure_experience_continuity: true,
          filters: { groups: [{ rollout_percentage: 50 }] },
        },
        { id: 6, key: 'broken', filters: 'not json' },
      ],
      { 0: 'company' },
    );
    expect(project.flags.map((f) => f.key)).toEqual(['person', 'group', 'cont', 'broken']);
    expect([...project.personKeys]).toEqual(['email']);
    expect([...(project.groupKeys.get(0) ?? [])]).toEqual(['plan']);
    expect(project.continuityKeys).toEqual(['cont']);
    expect(project.prepared.find((p) => p.flag.key === 'group')?.groupIndexes).toEqual([0]);
  });
});
