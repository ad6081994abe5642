// Property-based fuzzing of flag filters: management's validation (the request schema, then
// checkFlagFilters) on arbitrary filter objects throws nothing but its ValidationError, and
// @sett/flags evaluation of whatever passed validation, on arbitrary person and group
// properties, returns a result or throws only FlagEvaluationError (decide's "could not be
// computed"), and evaluateFlags never throws at all.
import fc from 'fast-check';
import {
  evaluateFlag,
  evaluateFlags,
  FlagEvaluationError,
  type FlagDefinition,
  type FlagFilters,
} from '@sett/flags';
import { ValidationError } from '@sett/http';
import { validateFeatureFlagCreate } from '../../../services/management/src/feature-flags/feature-flag-schemas';
import { checkFlagFilters } from '../../../services/management/src/feature-flags/flag-filters';
import { validateBody } from '../../../services/management/src/validate';
import { oddJson, oddKey, oddString } from './arbitraries';

const RUNS = 300;
const OPERATORS = [
  'exact',
  'is_not',
  'icontains',
  'not_icontains',
  'regex',
  'not_regex',
  'gt',
  'gte',
  'lt',
  'lte',
  'is_set',
  'is_not_set',
  'is_date_before',
  'is_date_after',
  'is_date_exact',
  'in',
  'flag_evaluates_to',
];
const REGEXES = [
  '^(a+)+$',
  '(a|a)*$',
  '(',
  '[',
  '(?<=a)b',
  'a{99999}',
  '\\',
  '.*',
  '\u0000',
  '(?i)abc',
  '\\p{L}+',
];

const operatorArb = fc.oneof(fc.constantFrom(...OPERATORS), oddString);
const valueArb = fc.oneof(
  oddJson,
  fc.constantFrom(...REGEXES),
  fc.array(fc.oneof(oddString, fc.double()), { maxLength: 4 }),
  fc.constantFrom(
    '-7d',
    '-1h',
    '2024-01-01',
    '-271821-04-20T00:00:00Z',
    '+275760-09-13T00:00:00Z',
    '1e400',
    'NaN',
  ),
);
const propertyFilterArb = fc.record(
  {
    key: fc.oneof(oddString, fc.constantFrom('email', 'plan', 'age', '$geoip_country_code')),
    value: valueArb,
    operator: operatorArb,
    type: fc.oneof(fc.constantFrom('person', 'group', 'cohort', 'flag', 'event'), oddString),
    group_type_index: fc.oneof(fc.integer({ min: -1, max: 6 }), fc.constant(null)),
  },
  { requiredKeys: ['key'] },
);
const groupArb = fc.record(
  {
    properties: fc.array(propertyFilterArb, { maxLength: 4 }),
    rollout_percentage: fc.oneof(
      fc.double({ min: -1, max: 101 }),
      fc.constant(null),
      fc.constantFrom(0, 100),
    ),
    variant: fc.oneof(fc.constant(null), fc.constantFrom('control', 'test'), oddString),
  },
  { requiredKeys: [] },
);
const filtersArb = fc.record(
  {
    groups: fc.array(groupArb, { maxLength: 4 }),
    super_groups: fc.array(groupArb, { maxLength: 2 }),
    multivariate: fc.oneof(
      fc.constant(null),
      fc.record({
        variants: fc.array(
          fc.record({
            key: fc.oneof(fc.constantFrom('control', 'test'), oddString),
            rollout_percentage: fc.oneof(fc.constantFrom(50, 100, 0), fc.double({ min: -1, max: 101 })),
          }),
          { maxLength: 3 },
        ),
      }),
    ),
    aggregation_group_type_index: fc.oneof(fc.constant(null), fc.integer({ min: -1, max: 6 })),
    payloads: fc.dictionary(fc.oneof(fc.constantFrom('true', 'control', 'test'), oddKey), oddJson, {
      maxKeys: 3,
    }),
    feature_enrollment: fc.boolean(),
  },
  { requiredKeys: [] },
);
/** Mostly plausible filters, sometimes any JSON at all. */
const anyFiltersArb = fc.oneof({ weight: 4, arbitrary: filtersArb }, { weight: 1, arbitrary: oddJson });

const GROUP_TYPES = new Set([0, 1]);

/** Management's create-path validation of a body: throws ValidationError or returns the filters. */
function validate(body: unknown): FlagFilters {
  const parsed = validateBody(validateFeatureFlagCreate, body);
  const filters = (parsed.filters ?? {}) as FlagFilters;
  checkFlagFilters(filters, GROUP_TYPES);
  return filters;
}

const contextArb = fc.record({
  distinctId: oddString,
  personProperties: fc.dictionary(fc.oneof(oddKey, fc.constantFrom('email', 'plan', 'age')), oddJson, {
    maxKeys: 6,
  }),
  groups: fc.dictionary(fc.constantFrom('company', 'project', '__proto__'), oddString, { maxKeys: 3 }),
  groupProperties: fc.dictionary(
    fc.constantFrom('company', 'project', '__proto__'),
    fc.dictionary(oddKey, oddJson, { maxKeys: 4 }),
    { maxKeys: 3 },
  ),
  groupTypeMapping: fc.constant({ 0: 'company', 1: 'project' } as Record<number, string>),
});

function flag(filters: FlagFilters, key = 'fuzzed'): FlagDefinition {
  return {
    id: 1,
    team_id: 1,
    key,
    name: '',
    filters,
    active: true,
    deleted: false,
    ensure_experience_continuity: false,
    version: 1,
  };
}

describe('flag filters under hostile input', () => {
  it('management validation throws nothing but ValidationError', () => {
    fc.assert(
      fc.property(anyFiltersArb, fc.oneof(fc.constant('fuzzed'), oddString), (filters, key) => {
        try {
          validate({ key, filters });
        } catch (error) {
          if (!(error instanceof ValidationError))
            throw new Error(`validation threw ${(error as Error)?.name}: ${(error as Error)?.message}`);
        }
      }),
      { numRuns: RUNS },
    );
  });

  it('evaluation of validated filters returns or throws FlagEvaluationError, on any properties', () => {
    fc.assert(
      fc.property(filtersArb, contextArb, (raw, ctx) => {
        let filters: FlagFilters;
        try {
          filters = validate({ key: 'fuzzed', filters: raw });
        } catch {
          return; // refused at the edge: never stored, never evaluated
        }
        const started = Date.now();
        try {
          const result = evaluateFlag(flag(filters), ctx);
          expect(typeof result.enabled).toBe('boolean');
        } catch (error) {
          if (!(error instanceof FlagEvaluationError))
            throw new Error(`evaluateFlag threw ${(error as Error)?.name}: ${(error as Error)?.message}`);
        }
        expect(Date.now() - started).toBeLessThan(1000);
      }),
      { numRuns: RUNS },
    );
  });

  it('evaluateFlags never throws, even on stored filters that skipped validation', () => {
    fc.assert(
      fc.property(fc.array(anyFiltersArb, { maxLength: 3 }), contextArb, (list, ctx) => {
        const flags = list.map((f, i) => flag(f as FlagFilters, `f${i}`));
        const result = evaluateFlags(flags, ctx);
        expect(typeof result.errorsWhileComputingFlags).toBe('boolean');
      }),
      { numRuns: RUNS },
    );
  });

  it('answers a catastrophic regex on a long near-match quickly', () => {
    for (const pattern of ['^(a+)+$', '(a|a)*$', '(.*a){25}']) {
      for (const operator of ['regex', 'not_regex']) {
        const f = flag({
          groups: [
            {
              properties: [{ key: 'email', value: pattern, operator, type: 'person' }],
              rollout_percentage: 100,
            },
          ],
        });
        const started = Date.now();
        evaluateFlags([f], {
          distinctId: 'd',
          personProperties: { email: `${'a'.repeat(64)}!` },
          groups: {},
          groupProperties: {},
          groupTypeMapping: {},
        });
        expect(Date.now() - started).toBeLessThan(1000);
      }
    }
  });
});
