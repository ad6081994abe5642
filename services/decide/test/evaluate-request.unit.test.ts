// Step 2 of a decide request, alone: pure evaluation over gathered inputs, with the flags whose
// lookups failed left out and counted, and uncomputable flags reported instead of thrown.
import { prepareProjectFlags } from '../src/flags/flag-definitions';
import { evaluateRequest } from '../src/decide/evaluate-request';
import type { DecideInput, GatheredInputs } from '../src/decide/gather-inputs';

const project = prepareProjectFlags(
  7,
  [
    { id: 1, key: 'everyone', filters: { groups: [{ properties: [], rollout_percentage: 100 }] } },
    {
      id: 2,
      key: 'pro-only',
      filters: {
        groups: [{ properties: [{ key: 'plan', type: 'person', value: 'pro' }], rollout_percentage: 100 }],
      },
    },
  ],
  {},
  [],
);

const input: DecideInput = {
  project: { teamId: 7, organizationId: 'org' },
  distinctId: 'user-1',
  personProperties: {},
  groups: {},
  groupProperties: {},
  disableFlags: false,
};

const gathered = (over: Partial<Extract<GatheredInputs, { kind: 'ready' }>> = {}) =>
  ({
    kind: 'ready',
    source: 'local',
    project,
    overrides: {},
    person: null,
    groupRefs: [],
    storedGroups: new Map(),
    hashKeyOverrides: {},
    staticCohorts: undefined,
    failed: { person: false, groups: new Set<number>(), continuity: false, cohorts: false },
    lookups: [],
    ...over,
  }) as Extract<GatheredInputs, { kind: 'ready' }>;

describe('evaluateRequest', () => {
  const at = new Date('2026-01-01T00:00:00Z');

  it('evaluates against the stored person under the request’s properties', () => {
    const stored = evaluateRequest(
      input,
      gathered({ person: { personId: '1', properties: { plan: 'pro' } } }),
      at,
    );
    expect(stored.outcome.flags['pro-only']?.enabled).toBe(true);
    const overridden = evaluateRequest(
      input,
      gathered({ person: { personId: '1', properties: { plan: 'pro' } }, overrides: { plan: 'free' } }),
      at,
    );
    expect(overridden.outcome.flags['pro-only']?.enabled).toBe(false);
    expect(overridden.leftOut).toBe(0);
  });

  it('leaves out and counts the flags a failed person lookup would have fed', () => {
    const failed = { person: true, groups: new Set<number>(), continuity: false, cohorts: false };
    const result = evaluateRequest(input, gathered({ failed }), at);
    expect(Object.keys(result.outcome.flags)).toEqual(['everyone']);
    expect(result.leftOut).toBe(1);
    expect(result.outcome.errorsWhileComputingFlags).toBe(true);
  });

  it('is pure: the same inputs give the same answer', () => {
    const g = gathered({ overrides: { plan: 'pro' } });
    expect(evaluateRequest(input, g, at)).toEqual(evaluateRequest(input, g, at));
  });
});
