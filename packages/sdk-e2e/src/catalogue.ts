// One flag of every kind, created through the management API, and the person and group
// properties of many distinct ids that exercise every branch of them.
import {
  addCohortMembers,
  api,
  createCohort,
  createFlag,
  uploadCohortCsv,
  type Cohort,
  type FlagSpec,
} from './api';
import type { SettStack } from './stack';

export const GROUP_TYPE = 'company';

/** Flags created before the group type exists (the group flag needs the mapping). */
export function personFlags(prefix: string): FlagSpec[] {
  return [
    {
      key: `${prefix}-rollout`,
      filters: {
        groups: [{ properties: [], rollout_percentage: 40 }],
        payloads: { true: JSON.stringify({ banner: 'rollout' }) },
      },
    },
    {
      key: `${prefix}-everyone`,
      filters: { groups: [{ properties: [], rollout_percentage: 100 }] },
    },
    {
      key: `${prefix}-multivariate`,
      filters: {
        groups: [{ properties: [], rollout_percentage: 80 }],
        multivariate: {
          variants: [
            { key: 'control', rollout_percentage: 34 },
            { key: 'test', rollout_percentage: 33 },
            { key: 'other', rollout_percentage: 33 },
          ],
        },
        payloads: {
          control: JSON.stringify({ color: 'blue' }),
          test: JSON.stringify({ color: 'green', n: 2 }),
          other: JSON.stringify('plain string'),
        },
      },
    },
    {
      key: `${prefix}-person`,
      filters: {
        groups: [
          {
            properties: [{ key: 'plan', type: 'person', operator: 'exact', value: ['pro', 'enterprise'] }],
            rollout_percentage: 100,
          },
          {
            properties: [
              { key: 'age', type: 'person', operator: 'gt', value: 40 },
              { key: 'email', type: 'person', operator: 'icontains', value: '@corp.example' },
            ],
            rollout_percentage: 50,
          },
        ],
      },
    },
    {
      key: `${prefix}-override`,
      filters: {
        groups: [
          {
            properties: [{ key: 'email', type: 'person', operator: 'regex', value: '^user-[0-9]*7@' }],
            rollout_percentage: 100,
            variant: 'beta',
          },
          {
            properties: [{ key: 'plan', type: 'person', operator: 'is_not', value: ['free'] }],
            rollout_percentage: 60,
          },
        ],
        multivariate: {
          variants: [
            { key: 'alpha', rollout_percentage: 50 },
            { key: 'beta', rollout_percentage: 50 },
          ],
        },
      },
    },
    {
      key: `${prefix}-inactive`,
      active: false,
      filters: { groups: [{ properties: [], rollout_percentage: 100 }] },
    },
  ];
}

export function groupFlag(prefix: string): FlagSpec {
  return {
    key: `${prefix}-group`,
    filters: {
      aggregation_group_type_index: 0,
      groups: [
        {
          properties: [
            { key: 'tier', type: 'group', group_type_index: 0, operator: 'exact', value: ['premium'] },
          ],
          rollout_percentage: 100,
        },
        { properties: [], rollout_percentage: 30 },
      ],
      payloads: { true: JSON.stringify({ seats: 50 }) },
    },
  };
}

export interface Catalogue {
  keys: string[];
  /** Key of the flag behind the beta early access feature (super condition on enrollment). */
  betaKey: string;
  betaFeatureName: string;
}

/** The person flags and a beta early access feature (its flag carries the enrollment super condition). */
export async function createPersonCatalogue(stack: SettStack, prefix: string): Promise<Catalogue> {
  const keys: string[] = [];
  for (const spec of personFlags(prefix)) keys.push((await createFlag(stack, spec)).key);
  const betaFeatureName = `${prefix} beta`;
  const feature = await api<{ feature_flag: { key: string } }>(
    stack,
    'POST',
    `/api/projects/${stack.projectId}/early_access_feature/`,
    {
      name: betaFeatureName,
      description: 'Try the new thing',
      stage: 'beta',
      documentation_url: 'https://example.com/docs/beta',
    },
  );
  const betaKey = feature.feature_flag.key;
  // Enrolled persons get it (super condition); everyone else falls through to its 0% rollout.
  keys.push(betaKey);
  return { keys, betaKey, betaFeatureName };
}

export interface Subject {
  distinctId: string;
  personProperties: Record<string, string | number>;
  groups?: Record<string, string>;
  groupProperties?: Record<string, Record<string, string>>;
}

/** Distinct ids with properties that cover every condition of the catalogue. */
export function subjects(prefix: string, count: number, betaKey: string): Subject[] {
  const plans = ['free', 'pro', 'enterprise', 'team'];
  const out: Subject[] = [];
  for (let i = 0; i < count; i++) {
    const distinctId = `${prefix}-user-${i}`;
    const personProperties: Record<string, string | number> = {
      plan: plans[i % plans.length]!,
      age: 18 + ((i * 7) % 60),
      email: i % 3 === 0 ? `user-${i}@corp.example` : `user-${i}@mail.example`,
      [`$feature_enrollment/${betaKey}`]: i % 5 === 0 ? 'true' : 'false',
    };
    const s: Subject = { distinctId, personProperties };
    if (i % 4 !== 3) {
      const company = `company-${i % 23}`;
      s.groups = { [GROUP_TYPE]: company };
      s.groupProperties = { [GROUP_TYPE]: { tier: i % 23 < 8 ? 'premium' : 'basic' } };
    }
    out.push(s);
  }
  return out;
}

// Cohorts and flag dependencies (issue 11): a property cohort with nested AND/OR groups and a
// negated condition, a cohort that refers to it, a static cohort with members added by distinct
// id (CSV upload and JSON), flags targeted at each, and flags that depend on another flag's variant and
// on a boolean flag.

export interface CohortCatalogue {
  /** Property cohort: OR of AND groups, one condition negated. */
  paying: Cohort;
  /** Property cohort referring to `paying`. */
  payingInGbUs: Cohort;
  /** Static cohort: the members of `staticMembers`. */
  listed: Cohort;
  staticMembers: string[];
  /** Flags every local evaluation can answer (property cohorts and dependencies). */
  localKeys: string[];
  /** The flag on the static cohort: only the server knows its members. */
  staticKey: string;
  multivariateKey: string;
  /** Flag keys by role. */
  flag: {
    cohort: string;
    nested: string;
    notIn: string;
    multivariate: string;
    dependsOnVariant: string;
    dependsOnBoolean: string;
    static: string;
  };
}

export interface CohortSubject {
  index: number;
  distinctId: string;
  personProperties: Record<string, string | number>;
}

const COHORT_PLANS = ['free', 'pro', 'enterprise', 'team'];
const COUNTRIES = ['GB', 'US', 'DE', 'FR', 'NL'];

/** Distinct ids carrying every person property the cohorts read (no stored person needed). */
export function cohortSubjects(prefix: string, count: number): CohortSubject[] {
  return Array.from({ length: count }, (_, i) => ({
    index: i,
    distinctId: `${prefix}-${i}`,
    personProperties: {
      plan: COHORT_PLANS[i % COHORT_PLANS.length]!,
      age: 18 + ((i * 11) % 60),
      email: i % 3 === 0 ? `user-${i}@corp.example` : `user-${i}@mail.example`,
      country: COUNTRIES[(i * 3 + Math.floor(i / 5)) % COUNTRIES.length]!,
    },
  }));
}

/** Whether a subject is in the `paying` cohort, as PostHog defines it (the test's oracle). */
export function inPayingCohort(p: Record<string, string | number>, seniorAge = 70): boolean {
  const paying = (p.plan === 'pro' || p.plan === 'enterprise') && !String(p.email).includes('@corp.example');
  const senior = Number(p.age) >= seniorAge;
  const sevens = p.country !== 'DE' && /^user-[0-9]*3@/.test(String(p.email));
  return paying || senior || sevens;
}

/** The `paying` cohort's filters, with its age threshold. */
export function payingFilters(seniorAge: number): Record<string, unknown> {
  return {
    properties: {
      type: 'OR',
      values: [
        {
          type: 'AND',
          values: [
            { key: 'plan', type: 'person', operator: 'exact', value: ['pro', 'enterprise'] },
            { key: 'email', type: 'person', operator: 'icontains', value: '@corp.example', negation: true },
          ],
        },
        { type: 'AND', values: [{ key: 'age', type: 'person', operator: 'gte', value: seniorAge }] },
        {
          type: 'AND',
          values: [
            { key: 'country', type: 'person', operator: 'is_not', value: ['DE'] },
            { key: 'email', type: 'person', operator: 'regex', value: '^user-[0-9]*3@' },
          ],
        },
      ],
    },
  };
}

export async function createCohortCatalogue(
  stack: SettStack,
  prefix: string,
  staticMembers: string[],
): Promise<CohortCatalogue> {
  const paying = await createCohort(stack, {
    name: `${prefix} paying, not staff, or senior`,
    description: 'nested AND/OR with a negated condition',
    filters: payingFilters(70),
  });
  const payingInGbUs = await createCohort(stack, {
    name: `${prefix} paying in GB or US`,
    filters: {
      properties: {
        type: 'AND',
        values: [
          {
            type: 'AND',
            values: [
              { key: 'id', type: 'cohort', value: paying.id },
              { key: 'country', type: 'person', operator: 'exact', value: ['GB', 'US'] },
            ],
          },
        ],
      },
    },
  });
  const created = await createCohort(stack, { name: `${prefix} listed accounts`, is_static: true });
  // half the members by CSV upload, the rest by JSON
  const half = Math.ceil(staticMembers.length / 2);
  await uploadCohortCsv(stack, created.id, staticMembers.slice(0, half));
  const listed = await addCohortMembers(stack, created.id, staticMembers.slice(half));

  const cohortFlag = await createFlag(stack, {
    key: `${prefix}-cohort`,
    filters: {
      groups: [{ properties: [{ key: 'id', type: 'cohort', value: paying.id }], rollout_percentage: 100 }],
      payloads: { true: JSON.stringify({ cohort: 'paying' }) },
    },
  });
  const nested = await createFlag(stack, {
    key: `${prefix}-nested`,
    filters: {
      groups: [
        { properties: [{ key: 'id', type: 'cohort', value: payingInGbUs.id }], rollout_percentage: 70 },
      ],
    },
  });
  const notIn = await createFlag(stack, {
    key: `${prefix}-not-in`,
    filters: {
      groups: [
        {
          properties: [{ key: 'id', type: 'cohort', operator: 'not_in', value: paying.id }],
          rollout_percentage: 100,
        },
      ],
    },
  });
  const staticFlag = await createFlag(stack, {
    key: `${prefix}-static`,
    filters: {
      groups: [{ properties: [{ key: 'id', type: 'cohort', value: listed.id }], rollout_percentage: 100 }],
      payloads: { true: JSON.stringify({ listed: true }) },
    },
  });
  const multivariate = await createFlag(stack, {
    key: `${prefix}-mv`,
    filters: {
      groups: [{ properties: [], rollout_percentage: 90 }],
      multivariate: {
        variants: [
          { key: 'control', rollout_percentage: 34 },
          { key: 'test', rollout_percentage: 33 },
          { key: 'other', rollout_percentage: 33 },
        ],
      },
    },
  });
  const dependsOnVariant = await createFlag(stack, {
    key: `${prefix}-on-variant`,
    filters: {
      groups: [
        {
          properties: [
            { key: String(multivariate.id), type: 'flag', operator: 'flag_evaluates_to', value: 'test' },
          ],
          rollout_percentage: 100,
        },
      ],
    },
  });
  const dependsOnBoolean = await createFlag(stack, {
    key: `${prefix}-on-boolean`,
    filters: {
      groups: [
        {
          properties: [
            { key: String(cohortFlag.id), type: 'flag', operator: 'flag_evaluates_to', value: true },
            { key: 'plan', type: 'person', operator: 'exact', value: ['pro'] },
          ],
          rollout_percentage: 100,
        },
        {
          // a dependency on a dependent flag: chains of two
          properties: [
            // by key here (PostHog's UI stores the id; Sett takes either)
            { key: dependsOnVariant.key, type: 'flag', operator: 'flag_evaluates_to', value: false },
            { key: String(nested.id), type: 'flag', operator: 'flag_evaluates_to', value: true },
          ],
          rollout_percentage: 100,
        },
      ],
    },
  });
  const flag = {
    cohort: cohortFlag.key,
    nested: nested.key,
    notIn: notIn.key,
    multivariate: multivariate.key,
    dependsOnVariant: dependsOnVariant.key,
    dependsOnBoolean: dependsOnBoolean.key,
    static: staticFlag.key,
  };
  return {
    paying,
    payingInGbUs,
    listed,
    staticMembers,
    localKeys: [
      flag.cohort,
      flag.nested,
      flag.notIn,
      flag.multivariate,
      flag.dependsOnVariant,
      flag.dependsOnBoolean,
    ],
    staticKey: flag.static,
    multivariateKey: flag.multivariate,
    flag,
  };
}
