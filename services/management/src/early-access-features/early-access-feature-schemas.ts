// Request schemas of the early access feature endpoints (docs/interface.md, "Early access
// features"), and the shape of their answers. Update changes only its four writable fields;
// the linked flag cannot be changed (a 400 naming it), other fields are ignored.
import { notServed, type FromSchema } from '@sett/schemas';
import { bool, dateTime, int, nullable, shape, str, uuid } from '../api-schemas';
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
  properties: {
    ...fields,
    feature_flag_id: notServed('the linked flag is set when the feature is created'),
  },
} as const;

export type EarlyAccessFeatureCreateBody = FromSchema<typeof earlyAccessFeatureCreateSchema>;
export type EarlyAccessFeatureUpdateBody = FromSchema<typeof earlyAccessFeatureUpdateSchema>;

// --- answers ---

/** The nested flag: the flag fields PostHog lists there, nothing more. */
const nestedFlagSchema = shape({
  id: int,
  team_id: int,
  name: str,
  key: str,
  filters: { type: 'object' },
  deleted: bool,
  active: bool,
  ensure_experience_continuity: bool,
  has_encrypted_payloads: bool,
});

export const earlyAccessFeatureSchema = shape(
  {
    id: uuid,
    feature_flag: nullable(nestedFlagSchema),
    feature_flag_id: { ...int, description: 'only in the create answer' },
    name: str,
    description: str,
    stage: { type: 'string', enum: STAGES },
    documentation_url: str,
    created_at: dateTime,
  },
  { optional: ['feature_flag_id'] },
);
