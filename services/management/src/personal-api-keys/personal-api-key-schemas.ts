// Request schema of personal API key creation, and the shape of a key in answers.
import { SCOPES } from '@sett/keys';
import { arrayOf, dateTime, dateTimeOrNull, shape, str } from '../api-schemas';

export const personalApiKeyCreateSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['label', 'scopes'],
  properties: {
    label: { type: 'string', minLength: 1, maxLength: 40 },
    scopes: {
      type: 'array',
      minItems: 1,
      uniqueItems: true,
      items: { type: 'string', enum: [...SCOPES, '*'] },
    },
  },
} as const;

// Stated by hand: FromSchema cannot see through the spread enum of scopes.
export type PersonalApiKeyCreateBody = { label: string; scopes: string[] };

export const personalApiKeySchema = shape(
  {
    id: str,
    label: str,
    mask_value: { ...str, description: 'phx_...xxxx' },
    scopes: arrayOf(str),
    created_at: dateTime,
    last_used_at: dateTimeOrNull,
    value: { ...str, description: 'only in the create answer: the key itself, shown once' },
  },
  { optional: ['value'] },
);
