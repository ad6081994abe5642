// Request schemas of /api/organizations/ and its members (PostHog's writable fields), and the
// shapes of their answers.
import { type FromSchema } from '@sett/schemas';
import { anyJson, arrayOf, bool, dateTime, int, nullable, shape, str, strOrNull, uuid } from '../api-schemas';
import { teamSchema } from '../projects/project-schemas';
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

// --- answers ---

/** PostHog's organization; membership_level is the caller's level (null for staff looking in). */
export const organizationSchema = shape({
  id: uuid,
  name: str,
  slug: str,
  logo_media_id: strOrNull,
  created_at: dateTime,
  updated_at: dateTime,
  membership_level: {
    type: ['integer', 'null'],
    description: "the caller's level: 1 member, 8 admin, 15 owner",
  },
  plugins_access_level: int,
  teams: arrayOf(teamSchema),
  projects: arrayOf(shape({ id: int, organization_id: uuid, name: str })),
  available_product_features: arrayOf(anyJson),
  is_member_join_email_enabled: bool,
  metadata: strOrNull,
  customer_id: strOrNull,
  enforce_2fa: { type: ['boolean', 'null'] },
  member_count: { ...str, description: 'a number, as a string (PostHog)' },
  is_ai_data_processing_approved: { type: ['boolean', 'null'] },
});

export const organizationSummarySchema = shape({
  id: uuid,
  name: str,
  slug: str,
  logo_media_id: strOrNull,
  membership_level: { type: ['integer', 'null'] },
});

/** PostHog's OrganizationMemberSerializer, with UserBasicSerializer for `user`. */
export const memberSchema = shape(
  {
    id: uuid,
    user: shape({
      id: int,
      uuid,
      distinct_id: str,
      first_name: str,
      last_name: str,
      email: str,
      is_email_verified: bool,
      hedgehog_config: nullable({ type: 'object' }),
      role_at_organization: strOrNull,
    }),
    level: { type: 'integer', enum: [...LEVELS], description: '1 member, 8 admin, 15 owner' },
    joined_at: dateTime,
    updated_at: dateTime,
    is_2fa_enabled: bool,
    has_social_auth: bool,
    last_login: { type: 'null' },
  },
  { description: 'PostHog levels: 1 member, 8 admin, 15 owner.' },
);
