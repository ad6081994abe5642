// Request schema of PATCH /api/projects/:id/: the SDK settings remote config is built from, with
// PostHog's team field names, and the project name (unknown and read-only fields are ignored, as
// PostHog's serializer ignores them); the body of POST /api/projects/; and the shapes of the answers.
import { ValidationError } from '@sett/http';
import { WEB_VITALS_METRICS, type FromSchema } from '@sett/schemas';
import { anyJson, bool, int, shape, str, strOrNull, uuid } from '../api-schemas';
import { UUID_PATTERN } from '../validate';

export const projectUpdateSchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    name: { type: 'string', minLength: 1, maxLength: 200 },
    timezone: { type: 'string', minLength: 1, maxLength: 64, description: 'An IANA time zone name' },
    autocapture_opt_out: { type: 'boolean' },
    autocapture_exceptions_opt_in: { type: 'boolean' },
    heatmaps_opt_in: { type: 'boolean' },
    capture_performance_opt_in: { type: 'boolean' },
    autocapture_web_vitals_opt_in: { type: 'boolean' },
    autocapture_web_vitals_allowed_metrics: {
      description: 'null: every metric',
      anyOf: [
        { type: 'null' },
        { type: 'array', uniqueItems: true, items: { type: 'string', enum: WEB_VITALS_METRICS } },
      ],
    },
    capture_dead_clicks: { type: 'boolean' },
    session_recording_opt_in: {
      type: 'boolean',
      description: 'Stored for compatibility; Sett keeps no recordings, so remote config always says false.',
    },
    surveys_opt_in: { type: 'boolean' },
    anonymize_ips: {
      type: 'boolean',
      description:
        'Discard client IP data: ingestion stores no $ip (GeoIP still runs first). docs/data-lifecycle.md',
    },
    geoip_enabled: {
      type: 'boolean',
      description: '$geoip_* properties on events and persons from the client address, at ingestion',
    },
    data_retention_days: {
      description:
        'Days of events to keep (by event timestamp); null keeps them forever. docs/data-lifecycle.md',
      anyOf: [{ type: 'null' }, { type: 'integer', minimum: 1, maximum: 36500 }],
    },
    test_account_filters: {
      type: 'array',
      maxItems: 50,
      items: { type: 'object' },
      description:
        "PostHog's property filters (event, person or group) that queries with filterTestAccounts: true apply, to leave out internal and test users",
    },
  },
} as const;

export type ProjectUpdate = FromSchema<typeof projectUpdateSchema>;

/** POST /api/projects/: a name, optionally the organization (default: the caller's current one). */
export const projectCreateSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['name'],
  properties: {
    name: { type: 'string', minLength: 1, maxLength: 200 },
    organization: {
      type: 'string',
      format: 'uuid',
      pattern: UUID_PATTERN,
      description: 'default: the current organization',
    },
    timezone: { type: 'string', minLength: 1, maxLength: 64 },
  },
} as const;

export type ProjectCreate = FromSchema<typeof projectCreateSchema>;

const TIME_ZONES = new Set(['UTC', ...Intl.supportedValuesOf('timeZone')]);

/** 400 unless `timezone` is an IANA zone name this runtime knows (PostHog's choices are those). */
export function checkTimezone(timezone: string | undefined): void {
  if (timezone !== undefined && !TIME_ZONES.has(timezone))
    throw new ValidationError(`"${timezone}" is not a valid choice.`, 'timezone', 'invalid_choice');
}

// --- answers ---

/** A team as PostHog nests it (in users and organizations). */
export const teamSchema = shape({
  id: int,
  uuid,
  organization: uuid,
  project_id: int,
  api_token: str,
  name: str,
  completed_snippet_onboarding: bool,
  has_completed_onboarding_for: anyJson,
  ingested_event: bool,
  is_demo: bool,
  timezone: str,
  access_control: bool,
});

/** A project as /api/projects/ answers it: the team, its SDK settings and the masked secret key. */
export const projectSchema = shape(
  {
    ...(teamSchema.properties as Record<string, unknown>),
    autocapture_opt_out: bool,
    autocapture_exceptions_opt_in: bool,
    heatmaps_opt_in: bool,
    capture_performance_opt_in: bool,
    autocapture_web_vitals_opt_in: bool,
    autocapture_web_vitals_allowed_metrics: {
      anyOf: [{ type: 'null' }, { type: 'array', items: { type: 'string', enum: WEB_VITALS_METRICS } }],
    },
    capture_dead_clicks: bool,
    session_recording_opt_in: {
      ...bool,
      description: 'stored; remote config always sends sessionRecording: false (Sett keeps no recordings)',
    },
    surveys_opt_in: bool,
    data_retention_days: {
      type: ['integer', 'null'],
      description: 'days of events kept (by event timestamp); null keeps them forever',
    },
    anonymize_ips: { ...bool, description: "PostHog's 'Discard client IP data'" },
    test_account_filters: {
      type: 'array',
      items: { type: 'object' },
      description: 'property filters applied by queries with filterTestAccounts: true',
    },
    geoip_enabled: { ...bool, description: '$geoip_* properties from the client address, at ingestion' },
    secret_api_token_mask: { ...strOrNull, description: 'phs_...xxxx, or null before the first rotation' },
    has_secret_api_token_backup: { ...bool, description: 'the previous secret key is still accepted' },
    secret_api_token: {
      ...str,
      description: 'only in the rotate_secret_token answer: the new phs_ key, shown once',
    },
  },
  { optional: ['secret_api_token'] },
);
