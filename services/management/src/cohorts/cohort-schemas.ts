// Request schemas of the cohort endpoints. Compiled once here; the OpenAPI document imports the
// same objects. `filters.properties` is a tree of AND/OR groups: JSON Schema only checks its root
// here, every node below is checked by the iterative walk in cohort-filters.ts (bounded depth
// and leaf count, one precise message per problem, no recursion over client JSON).
import { compile, type FromSchema } from '@sett/schemas';
import { PROPERTY_OPERATORS } from '@sett/flags';
import { bool, creatorSchema, dateTime, int, paginated, shape, str } from '../api-schemas';

/** Longest distinct id a static cohort takes (longer ones are refused, with the CSV line). */
export const MAX_DISTINCT_ID_LENGTH = 400;
/** Most distinct ids one JSON add/remove request takes (a CSV upload takes more). */
export const MAX_IDS_PER_REQUEST = 10_000;

/** PostHog's cohort filters: `{properties: {type: "AND"|"OR", values: [...]}}`. */
export const cohortFiltersSchema = {
  type: 'object',
  properties: {
    properties: {
      type: 'object',
      required: ['type', 'values'],
      properties: {
        type: { type: 'string', enum: ['AND', 'OR'] },
        values: { type: 'array', items: { type: 'object' } },
      },
    },
  },
} as const;

const fields = {
  name: { type: 'string', minLength: 1, maxLength: 400 },
  description: { type: 'string', maxLength: 1000 },
  filters: cohortFiltersSchema,
  is_static: { type: 'boolean' },
} as const;

export const cohortCreateSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['name'],
  properties: fields,
} as const;

export const cohortUpdateSchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    ...fields,
    /** PostHog soft-deletes a cohort through PATCH {deleted: true}. */
    deleted: { type: 'boolean' },
  },
} as const;

const distinctIdList = {
  type: 'array',
  minItems: 1,
  maxItems: MAX_IDS_PER_REQUEST,
  items: { type: 'string', minLength: 1, maxLength: MAX_DISTINCT_ID_LENGTH },
} as const;

/** Sett's form of PostHog's add_persons_to_static_cohort: distinct ids instead of person uuids. */
export const cohortAddMembersSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['distinct_ids'],
  properties: { distinct_ids: distinctIdList },
} as const;

/** Sett's form of PostHog's remove_person_from_static_cohort: one distinct id or a list. */
export const cohortRemoveMembersSchema = {
  type: 'object',
  additionalProperties: false,
  minProperties: 1,
  maxProperties: 1,
  properties: {
    distinct_id: { type: 'string', minLength: 1, maxLength: MAX_DISTINCT_ID_LENGTH },
    distinct_ids: distinctIdList,
  },
} as const;

export type CohortCreateBody = FromSchema<typeof cohortCreateSchema>;
export type CohortUpdateBody = FromSchema<typeof cohortUpdateSchema>;
export type CohortAddMembersBody = FromSchema<typeof cohortAddMembersSchema>;
export type CohortRemoveMembersBody = FromSchema<typeof cohortRemoveMembersSchema>;

export const validateCohortCreate = compile<CohortCreateBody>(cohortCreateSchema);
export const validateCohortUpdate = compile<CohortUpdateBody>(cohortUpdateSchema);

// Leaves of the filter tree, checked one by one by the walk: the operators decide evaluates.
const PERSON_OPERATORS = PROPERTY_OPERATORS;

export const personLeafSchema = {
  type: 'object',
  required: ['type', 'key', 'operator'],
  properties: {
    type: { const: 'person' },
    key: { type: 'string', minLength: 1, maxLength: 400 },
    value: {},
    operator: { type: 'string', enum: PERSON_OPERATORS },
    negation: { type: 'boolean' },
  },
} as const;

export const cohortLeafSchema = {
  type: 'object',
  required: ['type', 'key', 'value'],
  properties: {
    type: { const: 'cohort' },
    key: { const: 'id' },
    value: {
      anyOf: [
        { type: 'integer', minimum: 1 },
        { type: 'string', pattern: '^[1-9][0-9]{0,9}$' },
      ],
    },
    negation: { type: 'boolean' },
  },
} as const;

/** "Performed event X in the last N days": stored, never evaluated by decide, refused in flags. */
export const behavioralLeafSchema = {
  type: 'object',
  required: ['type', 'key', 'value'],
  properties: {
    type: { const: 'behavioral' },
    key: { type: ['string', 'integer'] },
    value: { type: 'string' },
    event_type: { type: 'string' },
    negation: { type: 'boolean' },
  },
} as const;

export const validatePersonLeaf = compile(personLeafSchema);
export const validateCohortLeaf = compile(cohortLeafSchema);
export const validateBehavioralLeaf = compile(behavioralLeafSchema);

// --- answers ---

/** PostHog's cohort shape (fields Sett has no use for carry PostHog's neutral values). */
export const cohortSchema = shape({
  id: int,
  name: str,
  description: str,
  groups: { type: 'array', maxItems: 0, description: 'always empty (a legacy PostHog field)' },
  deleted: bool,
  filters: {
    type: 'object',
    description:
      'filters.properties: a tree of AND/OR groups of person conditions {key, type: "person", value, operator, ' +
      'negation}, cohort references {key: "id", type: "cohort", value, negation} and behavioural conditions ' +
      '(stored, refused in feature flags)',
  },
  query: { type: 'null' },
  version: int,
  pending_version: { type: 'null' },
  is_calculating: bool,
  created_by: creatorSchema,
  created_at: dateTime,
  last_calculation: dateTime,
  errors_calculating: int,
  count: { type: ['integer', 'null'], description: 'members of a static cohort; null for dynamic ones' },
  is_static: bool,
});

export const cohortMembersAnswer = paginated(shape({ distinct_id: str }));

/** A static cohort upload as PostHog's UI sends it (multipart/form-data). */
export const cohortUploadForm = {
  type: 'object',
  properties: {
    name: str,
    description: str,
    is_static: { type: 'string', enum: ['true', 'false'] },
    deleted: { type: 'string', enum: ['true', 'false'] },
    filters: { type: 'string', description: 'JSON' },
    csv: {
      type: 'string',
      contentMediaType: 'text/csv',
      description:
        'UTF-8, at most 50 MB. One column of distinct ids (an optional distinct_id header), or several ' +
        `columns with a distinct_id / distinct-id header. Ids are trimmed, at most ${MAX_DISTINCT_ID_LENGTH} ` +
        'characters, without NUL (else 400 naming the line).',
    },
  },
} as const;
