// Request schema of personal API key creation, and the shape of a key in answers.
import { SCOPES } from '@sett/keys';
import { UUID_PATTERN } from '@sett/schemas';
import { arrayOf, dateTime, dateTimeOrNull, int, shape, str } from '../api-schemas';

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
    scoped_teams: {
      type: ['array', 'null'],
      maxItems: 100,
      uniqueItems: true,
      items: { type: 'integer', minimum: 1, maximum: 2147483647 },
      description: 'the projects the key is limited to; null or empty: all',
    },
    scoped_organizations: {
      type: ['array', 'null'],
      maxItems: 100,
      uniqueItems: true,
      items: { type: 'string', format: 'uuid', pattern: UUID_PATTERN },
      description: 'the organizations the key is limited to; null or empty: all',
    },
  },
} as const;

// Stated by hand: FromSchema cannot see through the spread enum of scopes.
export type PersonalApiKeyCreateBody = {
  label: string;
  scopes: string[];
  scoped_teams?: number[] | null;
  scoped_organizations?: string[] | null;
};

export const personalApiKeySchema = shape(
  {
    id: str,
    label: str,
    mask_value: { ...str, description: 'phx_...xxxx' },
    user_id: int,
    scopes: arrayOf(str),
    scoped_teams: { ...arrayOf(int), description: 'the projects the key is limited to; empty: all' },
    scoped_organizations: {
      ...arrayOf(str),
      description: 'the organizations the key is limited to; empty: all',
    },
    created_at: dateTime,
    last_used_at: dateTimeOrNull,
    value: { ...str, description: 'only in the create answer: the key itself, shown once' },
  },
  { optional: ['value'] },
);
