// Which stored properties the decide service must load for a set of flags.
import { requiredGroupProperties, requiredPersonProperties } from '../src';
import { flag } from './helpers';

describe('required properties', () => {
  const flags = [
    flag('person', {
      groups: [
        {
          properties: [
            { key: 'email', operator: 'icontains', value: '@x', type: 'person' },
            { key: 'legacy', value: 1 },
          ],
        },
        {
          properties: [{ key: 'size', value: 5, type: 'group', group_type_index: 2 }],
          rollout_percentage: 10,
        },
        { properties: [{ key: 'id', value: 4, type: 'cohort' }] },
      ],
      super_groups: [
        { properties: [{ key: '$feature_enrollment/person', value: ['true'], type: 'person' }] },
      ],
    }),
    flag('org', {
      aggregation_group_type_index: 0,
      groups: [
        {
          properties: [
            { key: 'tier', value: 'gold', type: 'group', group_type_index: 0 },
            { key: 'plan', value: 'x' },
          ],
        },
      ],
    }),
    flag('enroll', { groups: [], feature_enrollment: true }),
    flag(
      'off',
      { groups: [{ properties: [{ key: 'ignored', value: 1, type: 'person' }] }] },
      { active: false },
    ),
    flag(
      'deleted',
      { groups: [{ properties: [{ key: 'ignored2', value: 1, type: 'group', group_type_index: 0 }] }] },
      { deleted: true },
    ),
  ];

  it('collects person keys from conditions, super conditions and enrollment of live flags', () => {
    expect([...requiredPersonProperties(flags)].sort()).toEqual(
      ['$feature_enrollment/enroll', '$feature_enrollment/person', 'email', 'legacy'].sort(),
    );
  });

  it('collects group keys per group type index, untyped filters going to the aggregation group', () => {
    const byGroup = requiredGroupProperties(flags);
    expect([...byGroup.keys()].sort()).toEqual([0, 2]);
    expect([...byGroup.get(0)!].sort()).toEqual(['plan', 'tier']);
    expect([...byGroup.get(2)!]).toEqual(['size']);
  });

  it('is empty for flags without property filters', () => {
    expect(requiredPersonProperties([flag('plain', { groups: [{ rollout_percentage: 50 }] })]).size).toBe(0);
    expect(requiredGroupProperties([]).size).toBe(0);
  });
});
