// Request schemas of the feature flag endpoints. Compiled once here; the OpenAPI document
// imports the same objects, so what is documented is exactly what is validated.
import { compile, type FromSchema } from '@sett/schemas';

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
export const validateFeatureFlagUpdate = compile<FeatureFlagUpdateBody>(featureFlagUpdateSchema);
