// Flag-level behaviour: condition order and reasons, group flags, enrollment (super conditions),
// experience continuity, payloads, and partial results when a flag cannot be computed.
import { createHash } from 'crypto';
import { evaluateFlag, evaluateFlags, FlagEvaluationError, type FlagDefinition } from '../src';
import { ctx, flag } from './helpers';

// Independent of the code under test: PostHog's hash via BigInt.
function hash(key: string, id: string, salt = ''): number {
  const hex = createHash('sha1').update(`${key}.${id}${salt}`).digest('hex').slice(0, 15);
  return Number(BigInt(`0x${hex}`)) / Number(0xfffffffffffffffn);
}
const idWhere = (pred: (id: string) => boolean, prefix = 'u'): string => {
  for (let i = 0; i < 100_000; i++) if (pred(`${prefix}${i}`)) return `${prefix}${i}`;
  throw new Error('no id found');
};

const variants = [
  { key: 'control', rollout_percentage: 50 },
  { key: 'test', rollout_percentage: 50 },
];
const hashedVariant = (key: string, id: string): string =>
  hash(key, id, 'variant') < 0.5 ? 'control' : 'test';

describe('conditions and reasons', () => {
  it('matches the first matching condition and reports its index', () => {
    const def = flag('f', {
      groups: [
        { properties: [{ key: 'plan', value: 'pro', type: 'person' }] },
        { properties: [{ key: 'email', operator: 'icontains', value: '@acme', type: 'person' }] },
      ],
    });
    const r = evaluateFlag(def, ctx('u', { personProperties: { email: 'a@ACME.io' } }));
    expect(r).toEqual({
      key: 'f',
      enabled: true,
      reason: { code: 'condition_match', condition_index: 1, description: 'Matched condition set 2' },
      metadata: { id: def.id, version: 1 },
    });
    expect(r).not.toHaveProperty('variant');
  });

  it('requires every property of a condition (AND) and treats conditions as OR', () => {
    const def = flag('and', {
      groups: [
        {
          properties: [
            { key: 'a', value: '1' },
            { key: 'b', value: '2' },
          ],
        },
        { properties: [{ key: 'c', value: '3' }] },
      ],
    });
    expect(evaluateFlag(def, ctx('u', { personProperties: { a: '1' } })).enabled).toBe(false);
    expect(evaluateFlag(def, ctx('u', { personProperties: { a: '1', b: '2' } })).enabled).toBe(true);
    expect(evaluateFlag(def, ctx('u', { personProperties: { c: '3' } })).reason.condition_index).toBe(1);
  });

  it('reports no_condition_match with the last condition tried when nothing matches', () => {
    const def = flag('none', {
      groups: [{ properties: [{ key: 'a', value: 'x' }] }, { properties: [{ key: 'b', value: 'y' }] }],
    });
    expect(evaluateFlag(def, ctx('u')).reason).toEqual({
      code: 'no_condition_match',
      condition_index: 1,
      description: 'No matching condition set',
    });
    expect(evaluateFlag(flag('empty', { groups: [] }), ctx('u')).reason).toEqual({
      code: 'no_condition_match',
      condition_index: null,
      description: 'No matching condition set',
    });
  });

  it('prefers out_of_rollout_bound over no_condition_match, keeping that condition index', () => {
    const id = idWhere((i) => hash('rb', i) > 0.1);
    const def = flag('rb', {
      groups: [
        { properties: [{ key: 'plan', value: 'pro' }], rollout_percentage: 10 },
        { properties: [{ key: 'plan', value: 'enterprise' }] },
      ],
    });
    const r = evaluateFlag(def, ctx(id, { personProperties: { plan: 'pro' } }));
    expect(r.enabled).toBe(false);
    expect(r.reason).toEqual({
      code: 'out_of_rollout_bound',
      condition_index: 0,
      description: 'Out of rollout bound',
    });
  });

  it('falls through a condition that is out of rollout to a later one that matches', () => {
    const id = idWhere((i) => hash('ft', i) > 0.2);
    const def = flag('ft', {
      groups: [{ rollout_percentage: 20 }, { properties: [{ key: 'beta', value: true }] }],
    });
    expect(evaluateFlag(def, ctx(id, { personProperties: { beta: 'true' } })).reason.condition_index).toBe(1);
  });

  it('treats a missing or null rollout_percentage as 100%', () => {
    for (const id of ['a', 'b', 'c', 'd']) {
      expect(evaluateFlag(flag('all', { groups: [{}] }), ctx(id)).enabled).toBe(true);
      expect(evaluateFlag(flag('all', { groups: [{ rollout_percentage: null }] }), ctx(id)).enabled).toBe(
        true,
      );
    }
  });
});

describe('multivariate flags and variant overrides', () => {
  it('assigns the hashed variant on a match', () => {
    for (const id of ['u1', 'u2', 'u3', 'u4', 'u5', 'u6']) {
      const r = evaluateFlag(flag('mv', { groups: [{}], multivariate: { variants } }), ctx(id));
      expect(r.variant).toBe(hashedVariant('mv', id));
    }
  });

  it('tries override conditions first but reports their original index', () => {
    const def = flag('ov', {
      groups: [
        { rollout_percentage: 100 },
        { properties: [{ key: 'email', value: 'qa@x.io' }], variant: 'test' },
      ],
      multivariate: { variants },
    });
    const qa = evaluateFlag(
      def,
      ctx(
        idWhere((i) => hashedVariant('ov', i) === 'control'),
        { personProperties: { email: 'qa@x.io' } },
      ),
    );
    expect(qa.variant).toBe('test');
    expect(qa.reason).toEqual({
      code: 'condition_match',
      condition_index: 1,
      description: 'Matched condition set 2',
    });
    const other = evaluateFlag(def, ctx('someone', { personProperties: { email: 'x@y.z' } }));
    expect(other.variant).toBe(hashedVariant('ov', 'someone'));
    expect(other.reason.condition_index).toBe(0);
  });

  it('keeps the relative order among override conditions (stable)', () => {
    const def = flag('ov2', {
      groups: [{}, { variant: 'test' }, { variant: 'control' }],
      multivariate: { variants },
    });
    const r = evaluateFlag(def, ctx('anyone'));
    expect(r.variant).toBe('test');
    expect(r.reason.condition_index).toBe(1);
  });

  it('ignores an override naming a variant that does not exist', () => {
    const def = flag('ov3', { groups: [{ variant: 'gone' }], multivariate: { variants } });
    expect(evaluateFlag(def, ctx('u9')).variant).toBe(hashedVariant('ov3', 'u9'));
  });
});

describe('payloads', () => {
  it('returns the boolean payload only when enabled, as a string holding JSON', () => {
    const id = idWhere((i) => hash('p', i) <= 0.5);
    const out = idWhere((i) => hash('p', i) > 0.5);
    const def = flag(
      'p',
      { groups: [{ rollout_percentage: 50 }], payloads: { true: { a: 1 } } },
      { name: 'Pay flag' },
    );
    expect(evaluateFlag(def, ctx(id)).metadata).toEqual({
      id: def.id,
      version: 1,
      payload: '{"a":1}',
      description: 'Pay flag',
    });
    expect(evaluateFlag(def, ctx(out)).metadata).not.toHaveProperty('payload');
  });

  it('keeps a stored JSON string as it is, and picks the payload of the variant', () => {
    const def = flag('pv', {
      groups: [{}],
      multivariate: { variants },
      payloads: { control: '{"color":"blue"}', test: '"red"' },
    });
    for (const id of ['a1', 'a2', 'a3', 'a4']) {
      const r = evaluateFlag(def, ctx(id));
      expect(r.metadata.payload).toBe(r.variant === 'control' ? '{"color":"blue"}' : '"red"');
    }
  });
});

describe('group flags', () => {
  const groupFlag = (extra = {}): FlagDefinition =>
    flag('org-flag', {
      aggregation_group_type_index: 1,
      groups: [
        {
          properties: [{ key: 'tier', value: 'gold', type: 'group', group_type_index: 1 }],
          rollout_percentage: 50,
        },
      ],
      ...extra,
    });

  it('is off with no_group_type when the group type is unknown or not in the request', () => {
    const want = { code: 'no_group_type', condition_index: null, description: 'No group type' };
    expect(evaluateFlag(groupFlag(), ctx('u', { groups: { organization: 'o1' } })).reason).toEqual(want);
    const r = evaluateFlag(
      groupFlag(),
      ctx('u', { groupTypeMapping: { 1: 'organization' }, groups: { project: 'p' } }),
    );
    expect(r.enabled).toBe(false);
    expect(r.reason).toEqual(want);
  });

  it('hashes the group key and reads that group’s properties', () => {
    const inKey = idWhere((k) => hash('org-flag', k) <= 0.5, 'org_');
    const outKey = idWhere((k) => hash('org-flag', k) > 0.5, 'org_');
    const base = { groupTypeMapping: { 0: 'project', 1: 'organization' } };
    const props = { organization: { tier: 'gold' } };
    // The person's distinct_id must not matter; the group key does.
    for (const person of ['p1', 'p2', 'p3']) {
      expect(
        evaluateFlag(
          groupFlag(),
          ctx(person, { ...base, groups: { organization: inKey }, groupProperties: props }),
        ).enabled,
      ).toBe(true);
      expect(
        evaluateFlag(
          groupFlag(),
          ctx(person, { ...base, groups: { organization: outKey }, groupProperties: props }),
        ).enabled,
      ).toBe(false);
    }
    const silver = { organization: { tier: 'silver' } };
    const r = evaluateFlag(
      groupFlag(),
      ctx('p', {
        ...base,
        groups: { organization: inKey },
        groupProperties: silver,
        personProperties: { tier: 'gold' },
      }),
    );
    expect(r.reason.code).toBe('no_condition_match');
  });

  it('reads person filters from the person on a person flag with a group filter', () => {
    const def = flag('mixed', {
      groups: [
        {
          properties: [
            { key: 'role', value: 'admin', type: 'person' },
            { key: 'size', operator: 'gt', value: 10, type: 'group', group_type_index: 0 },
          ],
        },
      ],
    });
    const base = { groupTypeMapping: { 0: 'company' }, personProperties: { role: 'admin' } };
    expect(evaluateFlag(def, ctx('u', { ...base, groupProperties: { company: { size: 50 } } })).enabled).toBe(
      true,
    );
    expect(evaluateFlag(def, ctx('u', { ...base, groupProperties: { company: { size: 5 } } })).enabled).toBe(
      false,
    );
    expect(evaluateFlag(def, ctx('u', base)).enabled).toBe(false);
  });
});

describe('early access enrollment (super conditions)', () => {
  const enrollmentFlag = (): FlagDefinition =>
    flag('eaf', {
      groups: [
        { properties: [{ key: 'email', operator: 'icontains', value: '@staff' }], rollout_percentage: 100 },
      ],
      super_groups: [
        {
          properties: [
            { key: '$feature_enrollment/eaf', value: ['true'], operator: 'exact', type: 'person' },
          ],
          rollout_percentage: 100,
        },
      ],
      payloads: { true: '{"ok":true}' },
    });
  const sc = { code: 'super_condition_value', condition_index: 0, description: 'Super condition value' };

  it('decides the flag when the enrollment property is set', () => {
    const on = evaluateFlag(
      enrollmentFlag(),
      ctx('u', { personProperties: { '$feature_enrollment/eaf': true } }),
    );
    expect(on.enabled).toBe(true);
    expect(on.reason).toEqual(sc);
    expect(on.metadata.payload).toBe('{"ok":true}');
    // Opted out: off, even though the normal condition would match.
    const off = evaluateFlag(
      enrollmentFlag(),
      ctx('u', { personProperties: { '$feature_enrollment/eaf': false, email: 'a@staff.io' } }),
    );
    expect(off.enabled).toBe(false);
    expect(off.reason).toEqual(sc);
    expect(off.metadata).not.toHaveProperty('payload');
  });

  it('falls through to the normal conditions when the property is not set', () => {
    const r = evaluateFlag(enrollmentFlag(), ctx('u', { personProperties: { email: 'a@staff.io' } }));
    expect(r.reason).toEqual({
      code: 'condition_match',
      condition_index: 0,
      description: 'Matched condition set 1',
    });
    expect(evaluateFlag(enrollmentFlag(), ctx('u')).reason.code).toBe('no_condition_match');
  });

  it('supports the feature_enrollment form keyed by the flag key', () => {
    const def = flag('new-eaf', { groups: [{ rollout_percentage: 0 }], feature_enrollment: true });
    expect(
      evaluateFlag(def, ctx('u', { personProperties: { '$feature_enrollment/new-eaf': 'true' } })).enabled,
    ).toBe(true);
    expect(
      evaluateFlag(def, ctx('u', { personProperties: { '$feature_enrollment/new-eaf': false } })).reason,
    ).toEqual(sc);
    expect(evaluateFlag(def, ctx(idWhere((i) => hash('new-eaf', i) > 0))).reason.code).toBe(
      'out_of_rollout_bound',
    );
  });
});

describe('experience continuity', () => {
  const continuity = (on: boolean): FlagDefinition =>
    flag(
      'cont',
      { groups: [{ rollout_percentage: 50 }], multivariate: { variants } },
      { ensure_experience_continuity: on },
    );

  it('buckets by the stored hash key instead of the distinct_id', () => {
    const anon = idWhere((i) => hash('cont', i) <= 0.5, 'anon_');
    const user = idWhere((i) => hash('cont', i) > 0.5, 'user_');
    const overrides = { hashKeyOverrides: { cont: anon } };
    const r = evaluateFlag(continuity(true), ctx(user, overrides));
    expect(r.enabled).toBe(true);
    expect(r.variant).toBe(hashedVariant('cont', anon));
    // Without continuity, or without an override for this flag, the distinct_id decides.
    expect(evaluateFlag(continuity(false), ctx(user, overrides)).enabled).toBe(false);
    expect(evaluateFlag(continuity(true), ctx(user, { hashKeyOverrides: { other: anon } })).enabled).toBe(
      false,
    );
  });
});

describe('evaluateFlags', () => {
  it('skips inactive and deleted flags', () => {
    const out = evaluateFlags(
      [
        flag('on', { groups: [{}] }),
        flag('inactive', { groups: [{}] }, { active: false }),
        flag('gone', { groups: [{}] }, { deleted: true }),
      ],
      ctx('u'),
    );
    expect(Object.keys(out.flags)).toEqual(['on']);
    expect(out.errorsWhileComputingFlags).toBe(false);
  });

  it('leaves out a flag that cannot be computed and still evaluates the others', () => {
    const errors: string[] = [];
    const out = evaluateFlags(
      [
        flag('before', { groups: [{}] }),
        flag('bad-regex', {
          groups: [{ properties: [{ key: 'email', operator: 'regex', value: '([a-z' }] }],
        }),
        flag('cohort', { groups: [{ properties: [{ key: 'id', value: 12, type: 'cohort' }] }] }),
        flag('malformed', { groups: 'nope' } as never),
        flag('after', { groups: [{ properties: [{ key: 'email', operator: 'regex', value: '@x\\.io$' }] }] }),
      ],
      ctx('u', { personProperties: { email: 'me@x.io' } }),
      (key) => errors.push(key),
    );
    expect(out.errorsWhileComputingFlags).toBe(true);
    expect(Object.keys(out.flags).sort()).toEqual(['after', 'before']);
    expect(out.flags.after!.enabled).toBe(true);
    expect(errors).toEqual(['bad-regex', 'cohort', 'malformed']);
  });

  it('an invalid regex fails the flag whoever asks, even behind a failing filter', () => {
    const def = flag('bad', {
      groups: [
        {
          properties: [
            { key: 'a', value: 'x' },
            { key: 'b', operator: 'not_regex', value: '*' },
          ],
        },
      ],
    });
    expect(() => evaluateFlag(def, ctx('u'))).toThrow(FlagEvaluationError);
  });
});
