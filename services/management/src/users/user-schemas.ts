// Request schemas of the users endpoints (the writable User fields, docs/interface.md "Users")
// and the shapes of their answers.
import { type FromSchema } from '@sett/schemas';
import {
  anyJson,
  arrayOf,
  bool,
  dateTime,
  jsonObject,
  nullable,
  shape,
  str,
  strOrNull,
  uuid,
} from '../api-schemas';
import { organizationSchema, organizationSummarySchema } from '../organizations/organization-schemas';
import { teamSchema } from '../projects/project-schemas';
import { MAX_INT4, UUID_PATTERN } from '../validate';

export const TOOLBAR_MODES = ['disabled', 'toolbar'] as const;
export const THEME_MODES = ['light', 'dark', 'system'] as const;
export const ROLES_AT_ORGANIZATION = [
  'engineering',
  'data',
  'product',
  'founder',
  'leadership',
  'marketing',
  'sales',
  'other',
  '',
] as const;

export const userUpdateSchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    first_name: { type: 'string', maxLength: 150 },
    last_name: { type: 'string', maxLength: 150 },
    email: { type: 'string', format: 'email', maxLength: 254 },
    notification_settings: { type: 'object' },
    anonymize_data: { type: 'boolean' },
    toolbar_mode: { type: ['string', 'null'], enum: [...TOOLBAR_MODES, null] },
    is_staff: { type: 'boolean' },
    set_current_organization: { type: 'string', format: 'uuid', pattern: UUID_PATTERN },
    // A string form is checked against MAX_INT4 by the route (a pattern cannot compare numbers).
    set_current_team: {
      type: ['string', 'integer'],
      pattern: '^[1-9][0-9]{0,9}$',
      minimum: 1,
      maximum: MAX_INT4,
    },
    password: { type: 'string', minLength: 8, maxLength: 128 },
    current_password: { type: 'string', maxLength: 128 },
    events_column_config: {},
    has_seen_product_intro_for: { type: ['object', 'null'] },
    theme_mode: { type: ['string', 'null'], enum: [...THEME_MODES, null] },
    hedgehog_config: { type: ['object', 'null'] },
    role_at_organization: { type: ['string', 'null'], enum: [...ROLES_AT_ORGANIZATION, null] },
  },
} as const;

/**
 * Per-user state is bounded: it is returned on every /api/users/@me/ and PATCH merges into
 * hedgehog_config. Over a cap → 400 naming the field (the request may be small; the stored
 * result would not be).
 */
export const MAX_HEDGEHOG_CONFIG_BYTES = 16 * 1024;
/** The other free-form user JSON fields (replaced, never merged). */
export const MAX_USER_JSON_BYTES = 64 * 1024;
/** Scenes in scene_personalisation; replacing an existing scene's dashboard always works. */
export const MAX_SCENE_PERSONALISATIONS = 100;

export const hedgehogConfigSchema = { type: 'object' } as const;

export const scenePersonalisationSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['scene', 'dashboard'],
  properties: {
    scene: { type: 'string', minLength: 1, maxLength: 200 },
    dashboard: { type: 'integer', minimum: 1, maximum: MAX_INT4 },
  },
} as const;

export const validate2faSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['token'],
  properties: { token: { type: 'string', pattern: '^[0-9]{6}$' } },
} as const;

export type UserUpdateBody = FromSchema<typeof userUpdateSchema>;
export type ScenePersonalisationBody = FromSchema<typeof scenePersonalisationSchema>;
export type Validate2faBody = FromSchema<typeof validate2faSchema>;

// --- answers ---

/** PostHog's user: the current organization and project nested (null when the caller cannot see them). */
export const userSchema = shape({
  date_joined: dateTime,
  uuid,
  distinct_id: str,
  first_name: str,
  last_name: str,
  email: str,
  pending_email: strOrNull,
  is_email_verified: bool,
  notification_settings: anyJson,
  anonymize_data: bool,
  toolbar_mode: strOrNull,
  has_password: bool,
  is_staff: bool,
  is_impersonated: bool,
  is_impersonated_until: strOrNull,
  sensitive_session_expires_at: strOrNull,
  team: nullable(teamSchema),
  organization: nullable(organizationSchema),
  organizations: arrayOf(organizationSummarySchema),
  events_column_config: anyJson,
  is_2fa_enabled: bool,
  has_social_auth: bool,
  has_seen_product_intro_for: anyJson,
  scene_personalisation: arrayOf(anyJson),
  theme_mode: strOrNull,
  hedgehog_config: nullable(jsonObject),
  role_at_organization: strOrNull,
});

export const hedgehogConfigAnswer = jsonObject;

export const start2faAnswer = shape({
  success: bool,
  secret: { ...str, description: 'the TOTP secret (base32), shown once' },
  otpauth_url: { ...str, description: 'for a QR code' },
});

export const successAnswer = shape({ success: bool });

export const backupCodesAnswer = shape({ backup_codes: arrayOf(str) });
