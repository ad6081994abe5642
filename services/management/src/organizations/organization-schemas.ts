// Request schemas of /api/organizations/ and its members (PostHog's writable fields). Compiled
// once; the OpenAPI document reuses these objects.
import { compile, type FromSchema } from '@sett/schemas';
import { LEVELS } from './levels';

export const organizationCreateSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['name'],
  properties: { name: { type: 'string', minLength: 1, maxLength: 64 } },
} as const;

export const organizationUpdateSchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    name: { type: 'string', minLength: 1, maxLength: 64 },
    is_member_join_email_enabled: { type: 'boolean' },
    enforce_2fa: { type: ['boolean', 'null'] },
    is_ai_data_processing_approved: { type: ['boolean', 'null'] },
  },
} as const;

/** Adds an existing user (by e-mail) to the organization. */
export const memberCreateSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['email'],
  properties: {
    email: { type: 'string', format: 'email', maxLength: 254 },
    level: { type: 'integer', enum: [...LEVELS], description: '1 member (default), 8 admin, 15 owner' },
  },
} as const;

export const memberUpdateSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['level'],
  properties: { level: { type: 'integer', enum: [...LEVELS], description: '1 member, 8 admin, 15 owner' } },
} as const;

export type OrganizationCreate = FromSchema<typeof organizationCreateSchema>;
export type OrganizationUpdate = FromSchema<typeof organizationUpdateSchema>;
export type MemberCreate = FromSchema<typeof memberCreateSchema>;
export type MemberUpdate = FromSchema<typeof memberUpdateSchema>;

export const validateOrganizationCreate = compile<OrganizationCreate>(organizationCreateSchema);
export const validateOrganizationUpdate = compile<OrganizationUpdate>(organizationUpdateSchema);
export const validateMemberCreate = compile<MemberCreate>(memberCreateSchema);
export const validateMemberUpdate = compile<MemberUpdate>(memberUpdateSchema);
