// Request schemas of the early access feature endpoints (docs/interface.md, "Early access features"). Update accepts only
// its four writable fields; anything else is a 400 naming the field.
import { compile, type FromSchema } from '@sett/schemas';
import { MAX_INT4 } from '../validate';

export const STAGES = ['draft', 'concept', 'alpha', 'beta', 'general-availability', 'archived'] as const;

const fields = {
  name: { type: 'string', minLength: 1, maxLength: 200 },
  description: { type: 'string', maxLength: 10_000 },
  stage: { type: 'string', enum: STAGES },
  documentation_url: { type: 'string', maxLength: 800 },
} as const;

export const earlyAccessFeatureCreateSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['name'],
  properties: { ...fields, feature_flag_id: { type: 'integer', minimum: 1, maximum: MAX_INT4 } },
} as const;

export const earlyAccessFeatureUpdateSchema = {
  type: 'object',
  additionalProperties: false,
  properties: fields,
} as const;

export type EarlyAccessFeatureCreateBody = FromSchema<typeof earlyAccessFeatureCreateSchema>;
export type EarlyAccessFeatureUpdateBody = FromSchema<typeof earlyAccessFeatureUpdateSchema>;

export const validateEarlyAccessFeatureCreate = compile<EarlyAccessFeatureCreateBody>(
  earlyAccessFeatureCreateSchema,
);
export const validateEarlyAccessFeatureUpdate = compile<EarlyAccessFeatureUpdateBody>(
  earlyAccessFeatureUpdateSchema,
);
