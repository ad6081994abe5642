// Request schema of personal API key creation.
import { SCOPES } from '@sett/keys';
import { compile } from '@sett/schemas';

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

export const validatePersonalApiKeyCreate = compile<PersonalApiKeyCreateBody>(personalApiKeyCreateSchema);
