// Evaluation vectors for cohort filters (property cohorts with nested AND/OR and negation,
// static membership, cohorts in cohorts, missing properties, deleted cohorts) and for flag
// dependencies (dependency order, variants, inactive, missing and cyclic dependencies).
import { evaluateFlags, type CohortDefinition, type FlagDefinition } from '../src';
import { ctx, flag } from './helpers';

function cohorts(...list: CohortDefinition[]): Map<number, CohortDefinition> {
  return new Map(list.map((c) => [c.id, c]));
}
const person = (key: string, value: unknown, operator = 'exact', negation = false) => ({
  key,
  type: 'person',
  value,
  operator,
  negation,
});
const inCohort = (id: number, operator = 'in') => ({ key: 'id', type: 'cohort', value: id, operator });

// (plan = pro AND NOT country = FR) OR (email icontains @staff)
const nested: CohortDefinition = {
  id: 10,
  is_static: false,
  filters: {
    properties: {
      type: 'OR',
      values: [
        { type: 'AND', values: [person('plan', 'pro'), person('country', 'FR', 'exact', true)] },
        { type: 'AND', values: [person('email', '@staff', 'icontains')] },
      ],
    },
  },
};
const staticCohort: CohortDefinition = { id: 20, is_static: true, filters: null };
// in cohort 10 AND in static cohort 20
const both: CohortDefinition = {
  id: 30,
  is_static: false,
  filters: { properties: { type: 'AND', values: [{ type: 'AND', values: [inCohort(10), inCohort(20)] }] } },
};

const onCohort = (key: string, id: number, operator = 'in') =>
  flag(key, { groups: [{ properties: [inCohort(id, operator)], rollout_percentage: 100 }] });

function run(flags: FlagDefinition[], personProperties: Record<string, unknown>, statics?: number[]) {
  return evaluateFlags(
    flags,
    ctx('user-1', {
      personProperties,
      cohorts: cohorts(nested, staticCohort, both),
      staticCohorts: statics ? new Set(statics) : undefined,
    }),
  );
}

describe('cohort filters', () => {
  const f = onCohort('beta', 10);
  const notIn = onCohort('not-beta', 10, 'not_in');

  it.each([
    [{ plan: 'pro', country: 'DE' }, true],
    [{ plan: 'pro', country: 'FR' }, false],
    [{ plan: 'pro' }, true], // negated exact on a missing property holds
    [{ plan: 'free', email: 'a@STAFF.io' }, true],
    [{ plan: 'free' }, false],
    [{}, false], // missing properties: no match, not an error
  ])('nested AND/OR with negation: %j -> %s', (props, expected) => {
    const out = run([f, notIn], props, []);
    expect(out.errorsWhileComputingFlags).toBe(false);
    expect(out.flags.beta!.enabled).toBe(expected);
    expect(out.flags['not-beta']!.enabled).toBe(!expected);
  });

  it('static cohorts match by membership', () => {
    const s = onCohort('static', 20);
    expect(run([s], {}, [20]).flags.static!.enabled).toBe(true);
    expect(run([s], {}, [99]).flags.static!.enabled).toBe(false);
  });

  it('a static cohort whose membership was not looked up cannot be computed', () => {
    const out = run([onCohort('static', 20), onCohort('beta', 10)], { plan: 'pro' });
    expect(out.errorsWhileComputingFlags).toBe(true);
    expect(out.flags.static).toBeUndefined();
    expect(out.flags.beta!.enabled).toBe(true);
  });

  it('cohorts in cohorts', () => {
    const f30 = onCohort('both', 30);
    expect(run([f30], { plan: 'pro' }, [20]).flags.both!.enabled).toBe(true);
    expect(run([f30], { plan: 'pro' }, []).flags.both!.enabled).toBe(false);
    expect(run([f30], { plan: 'free' }, [20]).flags.both!.enabled).toBe(false);
  });

  it('a deleted (unknown) cohort makes the flag "could not be computed"', () => {
    const out = run([onCohort('gone', 404), onCohort('beta', 10)], { plan: 'pro' }, []);
    expect(out.errorsWhileComputingFlags).toBe(true);
    expect(Object.keys(out.flags)).toEqual(['beta']);
  });

  it('a cohort cycle cannot be computed instead of looping', () => {
    const a: CohortDefinition = {
      id: 1,
      is_static: false,
      filters: { properties: { type: 'AND', values: [inCohort(2)] } },
    };
    const b: CohortDefinition = {
      id: 2,
      is_static: false,
      filters: { properties: { type: 'AND', values: [inCohort(1)] } },
    };
    const out = evaluateFlags([onCohort('loop', 1)], ctx('u', { cohorts: cohorts(a, b) }));
    expect(out.errorsWhileComputingFlags).toBe(true);
  });

  it('behavioural cohort criteria cannot be computed', () => {
    const behavioural: CohortDefinition = {
      id: 5,
      is_static: false,
      filters: {
        properties: {
          type: 'AND',
          values: [{ key: '$pageview', type: 'behavioral', value: 'performed_event' }],
        },
      },
    };
    const out = evaluateFlags([onCohort('b', 5)], ctx('u', { cohorts: cohorts(behavioural) }));
    expect(out.errorsWhileComputingFlags).toBe(true);
  });
});

describe('flag dependencies', () => {
  const variants = flag('exp', {
    groups: [{ properties: [person('plan', 'pro')], rollout_percentage: 100, variant: 'test' }],
    multivariate: {
      variants: [
        { key: 'control', rollout_percentage: 50 },
        { key: 'test', rollout_percentage: 50 },
      ],
    },
  });
  const dep = (key: string, on: FlagDefinition | string, value: unknown) =>
    flag(key, {
      groups: [
        {
          properties: [
            {
              key: typeof on === 'string' ? on : String(on.id),
              type: 'flag',
              value,
              operator: 'flag_evaluates_to',
            },
          ],
          rollout_percentage: 100,
        },
      ],
    });

  it('dependencies on variants, true and false, evaluated before their dependents', () => {
    // Dependents listed first: order in the list does not matter.
    const flags = [
      dep('on-test', variants, 'test'),
      dep('on-control', variants, 'control'),
      dep('on-any', variants, true),
      dep('on-off', variants, false),
      variants,
    ];
    const pro = evaluateFlags(flags, ctx('u', { personProperties: { plan: 'pro' } }));
    expect(pro.errorsWhileComputingFlags).toBe(false);
    expect(pro.flags.exp!.variant).toBe('test');
    expect([
      pro.flags['on-test']!.enabled,
      pro.flags['on-control']!.enabled,
      pro.flags['on-any']!.enabled,
      pro.flags['on-off']!.enabled,
    ]).toEqual([true, false, true, false]);
    const free = evaluateFlags(flags, ctx('u', { personProperties: { plan: 'free' } }));
    expect([
      free.flags['on-test']!.enabled,
      free.flags['on-any']!.enabled,
      free.flags['on-off']!.enabled,
    ]).toEqual([false, false, true]);
  });

  it('a dependency named by key, and a chain of dependencies', () => {
    const a = flag('a', { groups: [{ rollout_percentage: 100 }] });
    const b = dep('b', 'a', true);
    const c = dep('c', b, true);
    const out = evaluateFlags([c, b, a], ctx('u'));
    expect(out.flags.c!.enabled).toBe(true);
  });

  it('an inactive dependency is disabled; a missing one cannot be computed', () => {
    const off = flag('off', { groups: [{ rollout_percentage: 100 }] }, { active: false });
    const out = evaluateFlags(
      [dep('needs-off', off, false), dep('needs-missing', '99999', true)],
      ctx('u', { dependencyFlags: [off] }),
    );
    expect(out.flags['needs-off']!.enabled).toBe(true);
    expect(out.flags['needs-missing']).toBeUndefined();
    expect(out.errorsWhileComputingFlags).toBe(true);
  });

  it('a cycle makes every flag in it "could not be computed"', () => {
    const x = flag('x', { groups: [] });
    const y = dep('y', x, true);
    x.filters = {
      groups: [{ properties: [{ key: String(y.id), type: 'flag', value: true }], rollout_percentage: 100 }],
    };
    const plain = flag('plain', { groups: [{ rollout_percentage: 100 }] });
    const out = evaluateFlags([x, y, plain], ctx('u'));
    expect(Object.keys(out.flags)).toEqual(['plain']);
    expect(out.errorsWhileComputingFlags).toBe(true);
  });
});
