// Request schemas of the feature flag endpoints, the list's filters and the shapes of the
// answers. The route table (routes.ts) declares them, so what is documented is what is validated.
import { compile, type FromSchema } from '@sett/schemas';
import {
  bool,
  creatorSchema,
  dateTime,
  int,
  limitParam,
  offsetParam,
  searchParam,
  shape,
  str,
  booleanQuery,
} from '../api-schemas';

const propertyFilterSchema = {
  type: 'object',
  required: ['key'],
  properties: {
    key: { type: 'string', minLength: 1, maxLength: 400 },
    value: {},
    operator: { type: 'string' },
    type: { type: 'string' },
    group_type_index: { type: ['integer', 'null'], minimum: 0, maximum: 4 },
  },
} as const;

const conditionGroupSchema = {
  type: 'object',
  properties: {
    properties: { type: 'array', items: propertyFilterSchema },
    rollout_percentage: { type: ['number', 'null'], minimum: 0, maximum: 100 },
    variant: { type: ['string', 'null'] },
    description: { type: ['string', 'null'] },
  },
} as const;

export const flagFiltersSchema = {
  type: 'object',
  properties: {
    groups: { type: 'array', items: conditionGroupSchema },
    multivariate: {
      anyOf: [
        { type: 'null' },
        {
          type: 'object',
          required: ['variants'],
          properties: {
            variants: {
              type: 'array',
              minItems: 1,
              items: {
                type: 'object',
                required: ['key', 'rollout_percentage'],
                properties: {
                  key: { type: 'string', minLength: 1, maxLength: 400 },
                  name: { type: ['string', 'null'] },
                  rollout_percentage: { type: 'number', minimum: 0, maximum: 100 },
                },
              },
            },
          },
        },
      ],
    },
    aggregation_group_type_index: { type: ['integer', 'null'], minimum: 0, maximum: 4 },
    payloads: { type: 'object' },
    super_groups: { type: 'array', items: conditionGroupSchema },
    feature_enrollment: { type: 'boolean' },
  },
} as const;

/**
 * PostHog's remote configuration fields: such a flag only carries a payload (read through
 * .../feature_flags/<key>/remote_config), and encrypted payloads are stored encrypted.
 */
const remoteConfigurationFields = {
  is_remote_configuration: { type: 'boolean' },
  has_encrypted_payloads: { type: 'boolean' },
} as const;

const flagKey = { type: 'string', minLength: 1, maxLength: 400, pattern: '^[a-zA-Z0-9_-]+$' } as const;

export const featureFlagCreateSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['key'],
  properties: {
    key: flagKey,
    name: { type: 'string', maxLength: 1000 },
    filters: flagFiltersSchema,
    active: { type: 'boolean' },
    ensure_experience_continuity: { type: 'boolean' },
    ...remoteConfigurationFields,
  },
} as const;

export const featureFlagUpdateSchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    key: flagKey,
    name: { type: 'string', maxLength: 1000 },
    filters: flagFiltersSchema,
    active: { type: 'boolean' },
    ensure_experience_continuity: { type: 'boolean' },
    /** PostHog soft-deletes through PATCH {deleted: true} too. */
    deleted: { type: 'boolean' },
    ...remoteConfigurationFields,
  },
} as const;

export type FeatureFlagCreateBody = FromSchema<typeof featureFlagCreateSchema>;
export type FeatureFlagUpdateBody = FromSchema<typeof featureFlagUpdateSchema>;

export const validateFeatureFlagCreate = compile<FeatureFlagCreateBody>(featureFlagCreateSchema);

/** The list's filters, as PostHog's feature flag list takes them. */
export const FLAG_TYPES = ['boolean', 'multivariant', 'experiment', 'remote_config'] as const;

export const featureFlagListQuery = {
  type: 'object',
  properties: {
    limit: limitParam,
    offset: offsetParam,
    search: { ...searchParam, description: 'case-insensitive text the key or the name contains' },
    active: { ...booleanQuery, description: 'only active (true) or inactive (false) flags' },
    type: {
      type: 'string',
      enum: FLAG_TYPES,
      description:
        'boolean (no variants), multivariant, remote_config; experiment matches none (Sett has no experiments)',
    },
  },
} as const;

export type FeatureFlagListQuery = FromSchema<typeof featureFlagListQuery>;

// --- answers ---

export const featureFlagSchema = shape({
  id: int,
  team_id: int,
  name: str,
  key: str,
  filters: { type: 'object', description: 'PostHog flag filters (groups, multivariate, payloads, ...)' },
  deleted: bool,
  active: bool,
  ensure_experience_continuity: bool,
  has_encrypted_payloads: bool,
  is_remote_configuration: bool,
  version: int,
  created_at: dateTime,
  created_by: creatorSchema,
});

export const remoteConfigAnswer = {
  type: ['string', 'null'],
  description: "the payload's JSON text as a JSON string (the SDKs parse it twice), or null",
} as const;
