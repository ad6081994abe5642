// Evaluation memoizes what it derives from a definition (validation, condition order, variant
// table, metadata) and compiled regexes. These tests pin that the memo never changes a result:
// the same definition object evaluated many times answers exactly as a fresh copy would.
import { evaluateFlag, evaluateFlags, type FlagDefinition } from '../src';
import { ctx, flag } from './helpers';

const definitions = (): FlagDefinition[] => [
  flag('rollout', { groups: [{ properties: [], rollout_percentage: 40 }] }),
  flag(
    'mv',
    {
      groups: [
        { properties: [{ key: 'plan', type: 'person', value: 'pro' }], rollout_percentage: 100 },
        { properties: [], rollout_percentage: 60, variant: 'b' },
      ],
      multivariate: {
        variants: [
          { key: 'a', rollout_percentage: 50 },
          { key: 'b', rollout_percentage: 50 },
        ],
      },
      payloads: { a: '{"x":1}', b: '{"x":2}' },
    },
    { name: 'Multi' },
  ),
  flag('re', {
    groups: [{ properties: [{ key: 'email', type: 'person', operator: 'regex', value: '^user[0-9]*5@' }] }],
    payloads: { true: { on: true } },
  }),
  flag('bad-re', { groups: [{ properties: [{ key: 'email', operator: 'regex', value: '(' }] }] }),
  flag('group', {
    aggregation_group_type_index: 0,
    groups: [{ properties: [{ key: 'size', type: 'group', operator: 'gt', value: 10 }] }],
  }),
];

const contexts = Array.from({ length: 200 }, (_, i) =>
  ctx(`user-${i}`, {
    personProperties: { plan: i % 3 === 0 ? 'pro' : 'free', email: `user${i}@example.com` },
    groups: i % 2 ? { company: `c${i}` } : {},
    groupProperties: { company: { size: i } },
    groupTypeMapping: { 0: 'company' },
  }),
);

describe('memoized evaluation', () => {
  it('answers as fresh copies of the definitions would, request after request', () => {
    const shared = definitions();
    for (const c of contexts) {
      // A deep copy is a new object: nothing memoized applies to it.
      const fresh = JSON.parse(JSON.stringify(shared)) as FlagDefinition[];
      const errors: string[] = [];
      const got = evaluateFlags(shared, c, (key) => errors.push(key));
      expect(got).toEqual(evaluateFlags(fresh, c));
      expect(errors).toEqual(['bad-re']);
      expect(got.errorsWhileComputingFlags).toBe(true);
    }
  });

  it('reports an invalid definition as an error every time, not only the first', () => {
    const [, , , bad] = definitions();
    for (let i = 0; i < 3; i++) expect(() => evaluateFlag(bad!, contexts[i]!)).toThrow(/invalid regex/);
  });

  it('notices a definition whose filters or identity were replaced', () => {
    const f = flag('swap', { groups: [{ properties: [], rollout_percentage: 100 }] }, { name: 'Old' });
    expect(evaluateFlag(f, ctx('x')).enabled).toBe(true);
    expect(evaluateFlag(f, ctx('x')).metadata.description).toBe('Old');
    f.filters = { groups: [{ properties: [], rollout_percentage: 0 }] };
    expect(evaluateFlag(f, ctx('x')).enabled).toBe(false);
    f.name = 'New';
    f.version = 7;
    expect(evaluateFlag(f, ctx('x')).metadata).toEqual({ id: f.id, version: 7, description: 'New' });
    f.filters = { groups: [{ properties: [{ key: 'a', operator: 'regex', value: '[' }] }] };
    expect(() => evaluateFlag(f, ctx('x'))).toThrow(/invalid regex/);
  });

  it('matches a cached regex the same way for every subject', () => {
    const re = definitions()[2]!;
    const matching = contexts.filter((c) => evaluateFlag(re, c).enabled).map((c) => c.distinctId);
    expect(matching).toEqual(
      contexts.filter((c) => /^user[0-9]*5@/.test(String(c.personProperties.email))).map((c) => c.distinctId),
    );
    expect(evaluateFlag(re, contexts[5]!).metadata.payload).toBe('{"on":true}');
  });
});
