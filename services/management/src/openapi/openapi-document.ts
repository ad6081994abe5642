// The OpenAPI 3 document served at /api/schema/. Request bodies are the very schema objects the
// handlers validate with (imported, not copied), so the document cannot drift from the checks.
// Response shapes are described here for client generators.
import { SCOPES } from '@sett/keys';
import { WEB_VITALS_METRICS } from '@sett/schemas';
import {
  earlyAccessFeatureCreateSchema,
  earlyAccessFeatureUpdateSchema,
} from '../early-access-features/early-access-feature-schemas';
import {
  featureFlagCreateSchema,
  featureFlagUpdateSchema,
  flagFiltersSchema,
} from '../feature-flags/feature-flag-schemas';
import { MAX_COHORT_GROUP_DEPTH, MAX_COHORT_LEAVES } from '../cohorts/cohort-filters';
import { MAX_CSV_BYTES } from '../cohorts/cohort-multipart';
import {
  MAX_DISTINCT_ID_LENGTH,
  cohortAddMembersSchema,
  cohortCreateSchema,
  cohortFiltersSchema,
  cohortRemoveMembersSchema,
  cohortUpdateSchema,
} from '../cohorts/cohort-schemas';
import { DEFAULT_LIMIT, MAX_LIMIT } from '../pagination/pagination';
import { MAX_INT4 } from '../validate';
import { personalApiKeyCreateSchema } from '../personal-api-keys/personal-api-key-schemas';
import {
  memberCreateSchema,
  memberUpdateSchema,
  organizationCreateSchema,
  organizationUpdateSchema,
} from '../organizations/organization-schemas';
import { projectCreateSchema, projectUpdateSchema } from '../projects/project-schemas';
import {
  MAX_HEDGEHOG_CONFIG_BYTES,
  MAX_SCENE_PERSONALISATIONS,
  hedgehogConfigSchema,
  scenePersonalisationSchema,
  userUpdateSchema,
  validate2faSchema,
} from '../users/user-schemas';
import { personBulkDeleteSchema } from '../persons/person-schemas';

/** Request schemas by component name: the same objects the validators were compiled from. */
export const requestSchemas = {
  PatchedUser: userUpdateSchema,
  HedgehogConfig: hedgehogConfigSchema,
  ScenePersonalisation: scenePersonalisationSchema,
  Validate2fa: validate2faSchema,
  EarlyAccessFeatureCreate: earlyAccessFeatureCreateSchema,
  PatchedEarlyAccessFeature: earlyAccessFeatureUpdateSchema,
  FeatureFlagCreate: featureFlagCreateSchema,
  PatchedFeatureFlag: featureFlagUpdateSchema,
  FeatureFlagFilters: flagFiltersSchema,
  CohortCreate: cohortCreateSchema,
  PatchedCohort: cohortUpdateSchema,
  CohortFilters: cohortFiltersSchema,
  CohortAddMembers: cohortAddMembersSchema,
  CohortRemoveMembers: cohortRemoveMembersSchema,
  PersonalApiKeyCreate: personalApiKeyCreateSchema,
  PatchedProject: projectUpdateSchema,
  ProjectCreate: projectCreateSchema,
  OrganizationCreate: organizationCreateSchema,
  PatchedOrganization: organizationUpdateSchema,
  OrganizationMemberCreate: memberCreateSchema,
  PatchedOrganizationMember: memberUpdateSchema,
  PersonBulkDelete: personBulkDeleteSchema,
} as const;

const str = { type: 'string' } as const;
const strN = { type: ['string', 'null'] } as const;
const int = { type: 'integer' } as const;
const bool = { type: 'boolean' } as const;
const dt = { type: 'string', format: 'date-time' } as const;
const any = {} as const;
const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });

const responseSchemas = {
  Team: {
    type: 'object',
    properties: {
      id: int,
      uuid: { type: 'string', format: 'uuid' },
      organization: { type: 'string', format: 'uuid' },
      project_id: { type: 'integer', format: 'int64' },
      api_token: str,
      name: str,
      completed_snippet_onboarding: bool,
      has_completed_onboarding_for: any,
      ingested_event: bool,
      is_demo: bool,
      timezone: str,
      access_control: bool,
    },
  },
  Project: {
    description:
      'A Team with its SDK settings (read by remote config, /array/<token>/config) and the masked secret API key. ' +
      'session_recording_opt_in is stored but remote config always sends sessionRecording: false (Sett keeps no recordings).',
    allOf: [
      ref('Team'),
      {
        type: 'object',
        properties: {
          autocapture_opt_out: bool,
          autocapture_exceptions_opt_in: bool,
          heatmaps_opt_in: bool,
          capture_performance_opt_in: bool,
          autocapture_web_vitals_opt_in: bool,
          autocapture_web_vitals_allowed_metrics: {
            anyOf: [{ type: 'null' }, { type: 'array', items: { type: 'string', enum: WEB_VITALS_METRICS } }],
          },
          capture_dead_clicks: bool,
          session_recording_opt_in: bool,
          surveys_opt_in: bool,
          secret_api_token_mask: { ...strN, description: 'phs_...xxxx, or null before the first rotation' },
          has_secret_api_token_backup: { ...bool, description: 'the previous secret key is still accepted' },
          secret_api_token: {
            ...str,
            description: 'Only in the rotate_secret_token response: the new phs_ key, shown once.',
          },
        },
      },
    ],
  },
  Organization: {
    type: 'object',
    properties: {
      id: { type: 'string', format: 'uuid' },
      name: str,
      slug: str,
      logo_media_id: strN,
      created_at: dt,
      updated_at: dt,
      membership_level: { type: ['integer', 'null'] },
      plugins_access_level: int,
      teams: { type: 'array', items: ref('Team') },
      projects: { type: 'array', items: { type: 'object' } },
      available_product_features: { type: 'array', items: any },
      is_member_join_email_enabled: bool,
      metadata: strN,
      customer_id: strN,
      enforce_2fa: { type: ['boolean', 'null'] },
      member_count: str,
      is_ai_data_processing_approved: { type: ['boolean', 'null'] },
    },
  },
  UserBasic: {
    type: 'object',
    properties: {
      id: int,
      uuid: { type: 'string', format: 'uuid' },
      distinct_id: str,
      first_name: str,
      last_name: str,
      email: str,
      is_email_verified: bool,
      hedgehog_config: any,
      role_at_organization: strN,
    },
  },
  OrganizationMember: {
    type: 'object',
    description: 'PostHog levels: 1 member, 8 admin, 15 owner.',
    properties: {
      id: { type: 'string', format: 'uuid' },
      user: ref('UserBasic'),
      level: { type: 'integer', enum: [1, 8, 15] },
      joined_at: dt,
      updated_at: dt,
      is_2fa_enabled: bool,
      has_social_auth: bool,
      last_login: { type: 'null' },
    },
  },
  OrganizationSummary: {
    type: 'object',
    properties: {
      id: { type: 'string', format: 'uuid' },
      name: str,
      slug: str,
      logo_media_id: strN,
      membership_level: { type: ['integer', 'null'] },
    },
  },
  User: {
    type: 'object',
    properties: {
      date_joined: dt,
      uuid: { type: 'string', format: 'uuid' },
      distinct_id: str,
      first_name: str,
      last_name: str,
      email: { type: 'string', format: 'email' },
      pending_email: strN,
      is_email_verified: bool,
      notification_settings: { type: 'object' },
      anonymize_data: bool,
      toolbar_mode: strN,
      has_password: bool,
      is_staff: bool,
      is_impersonated: bool,
      is_impersonated_until: strN,
      sensitive_session_expires_at: strN,
      team: { anyOf: [ref('Team'), { type: 'null' }] },
      organization: { anyOf: [ref('Organization'), { type: 'null' }] },
      organizations: { type: 'array', items: ref('OrganizationSummary') },
      events_column_config: any,
      is_2fa_enabled: bool,
      has_social_auth: bool,
      has_seen_product_intro_for: any,
      scene_personalisation: {
        type: 'array',
        items: { type: 'object', properties: { scene: str, dashboard: int } },
      },
      theme_mode: strN,
      hedgehog_config: any,
      role_at_organization: strN,
    },
  },
  FeatureFlag: {
    type: 'object',
    properties: {
      id: int,
      team_id: int,
      name: str,
      key: str,
      filters: ref('FeatureFlagFilters'),
      deleted: bool,
      active: bool,
      ensure_experience_continuity: bool,
      has_encrypted_payloads: bool,
      is_remote_configuration: bool,
      version: int,
      created_at: dt,
      created_by: { type: ['object', 'null'] },
    },
  },
  CohortFilterGroup: {
    description:
      `The tree under filters.properties (the request schema checks its root; every node is checked on save): ` +
      `groups nest at most ${MAX_COHORT_GROUP_DEPTH} deep and hold at most ${MAX_COHORT_LEAVES} conditions in all.`,
    type: 'object',
    required: ['type', 'values'],
    properties: {
      type: { enum: ['AND', 'OR'] },
      values: {
        type: 'array',
        items: { anyOf: [ref('CohortFilterGroup'), ref('CohortPropertyFilter')] },
      },
    },
  },
  CohortPropertyFilter: {
    description:
      'A person property condition {key, type: "person", value, operator, negation} with any operator flags support ' +
      '(regex in RE2 syntax; value may be left out for is_set / is_not_set); a cohort reference ' +
      '{key: "id", type: "cohort", value: <cohort id of this project>, negation} (no loops); or a behavioural ' +
      'condition {type: "behavioral", key, value, event_type, ...}, stored but refused in feature flags.',
    type: 'object',
    required: ['type'],
    properties: {
      type: { enum: ['person', 'cohort', 'behavioral'] },
      key: { type: ['string', 'integer'] },
      value: any,
      operator: strN,
      negation: bool,
    },
  },
  Cohort: {
    type: 'object',
    properties: {
      id: int,
      name: str,
      description: str,
      groups: { type: 'array', description: 'always empty (legacy PostHog field)' },
      deleted: bool,
      filters: { type: 'object', properties: { properties: ref('CohortFilterGroup') } },
      query: { type: 'null' },
      version: int,
      pending_version: { type: 'null' },
      is_calculating: bool,
      created_by: { type: ['object', 'null'] },
      created_at: dt,
      last_calculation: dt,
      errors_calculating: int,
      count: { type: ['integer', 'null'], description: 'members of a static cohort; null for dynamic ones' },
      is_static: bool,
    },
  },
  EarlyAccessFeature: {
    type: 'object',
    properties: {
      id: { type: 'string', format: 'uuid' },
      feature_flag: { anyOf: [ref('FeatureFlag'), { type: 'null' }] },
      feature_flag_id: { ...int, description: 'only in the create response' },
      name: str,
      description: str,
      stage: str,
      documentation_url: str,
      created_at: dt,
    },
  },
  PersonalApiKey: {
    type: 'object',
    properties: {
      id: str,
      label: str,
      mask_value: str,
      scopes: { type: 'array', items: str },
      created_at: dt,
      last_used_at: { type: ['string', 'null'], format: 'date-time' },
      value: { ...str, description: 'only in the create response' },
    },
  },
  Event: {
    type: 'object',
    properties: {
      id: { type: 'string', format: 'uuid' },
      uuid: { type: 'string', format: 'uuid' },
      event: str,
      distinct_id: str,
      properties: { type: 'object' },
      timestamp: dt,
      person: { type: ['object', 'null'] },
    },
  },
  Person: {
    type: 'object',
    properties: {
      id: { type: 'string', format: 'uuid' },
      uuid: { type: 'string', format: 'uuid' },
      distinct_ids: { type: 'array', items: str },
      properties: { type: 'object' },
      is_identified: bool,
      created_at: dt,
    },
  },
  PersonDeletion: {
    type: 'object',
    description: 'A person deletion job (docs/data-lifecycle.md)',
    properties: {
      id: { type: 'integer' },
      status: { type: 'string', enum: ['queued', 'running', 'succeeded', 'failed'] },
      phase: { type: 'string', enum: ['events', 'settle', 'done'] },
      delete_events: bool,
      distinct_id_count: { type: 'integer' },
      events_deleted: { type: 'integer' },
      persons_swept: { type: 'integer' },
      attempts: { type: 'integer' },
      last_error: strN,
      run_after: dt,
      created_at: dt,
      started_at: { type: ['string', 'null'], format: 'date-time' },
      finished_at: { type: ['string', 'null'], format: 'date-time' },
    },
  },
  Error: {
    type: 'object',
    properties: { type: str, code: str, detail: str, attr: strN },
  },
};

const paginated = (item: string) => ({
  type: 'object',
  properties: {
    count: int,
    next: { type: ['string', 'null'], format: 'uri' },
    previous: { type: ['string', 'null'], format: 'uri' },
    results: { type: 'array', items: ref(item) },
  },
});

const limitOffset = [
  {
    name: 'limit',
    in: 'query',
    schema: { type: 'integer', minimum: 1, default: DEFAULT_LIMIT, maximum: MAX_LIMIT },
    description: `page size (default ${DEFAULT_LIMIT}, larger values are clamped to ${MAX_LIMIT})`,
  },
  { name: 'offset', in: 'query', schema: { type: 'integer', minimum: 0, default: 0 } },
];
const pathParam = (name: string, schema: object = str) => ({ name, in: 'path', required: true, schema });
// Path ids are int4: anything else (negative, fractional, past 2^31 - 1) is a 404.
const intId = { type: 'integer', minimum: 1, maximum: MAX_INT4 } as const;
const project = pathParam('project_id', intId);

/** A static cohort upload as PostHog's UI sends it. */
const csvUpload = {
  type: 'object',
  properties: {
    name: str,
    description: str,
    is_static: { type: 'string', enum: ['true', 'false'] },
    filters: { type: 'string', description: 'JSON' },
    csv: {
      type: 'string',
      contentMediaType: 'text/csv',
      description:
        `At most ${MAX_CSV_BYTES} bytes, UTF-8. One column of distinct ids (an optional distinct_id header), or ` +
        `several columns with a distinct_id / distinct-id header. Ids are trimmed, at most ${MAX_DISTINCT_ID_LENGTH} ` +
        'characters, without NUL (else 400 naming the line).',
    },
  },
} as const;

interface Op {
  scope: string;
  summary: string;
  parameters?: object[];
  body?: keyof typeof requestSchemas;
  /** Also accepted as multipart/form-data (a static cohort CSV upload). */
  multipart?: object;
  status?: number;
  response?: object | null;
}

function operation(op: Op) {
  const status = String(op.status ?? 200);
  const errors = Object.fromEntries(
    ['400', '401', '403', '404', '409', '429', '503'].map((code) => [
      code,
      { description: 'error', content: { 'application/json': { schema: ref('Error') } } },
    ]),
  );
  return {
    summary: op.summary,
    description: `Required scope: \`${op.scope}\``,
    'x-required-scope': op.scope,
    parameters: op.parameters ?? [],
    ...(op.body
      ? {
          requestBody: {
            required: true,
            content: {
              'application/json': { schema: ref(op.body) },
              ...(op.multipart ? { 'multipart/form-data': { schema: op.multipart } } : {}),
            },
          },
        }
      : {}),
    responses: {
      [status]:
        op.response === null
          ? { description: 'no body' }
          : { description: 'ok', content: { 'application/json': { schema: op.response ?? {} } } },
      ...errors,
    },
    security: [{ PersonalApiKey: [op.scope] }],
  };
}

export function buildOpenApiDocument(serverUrl?: string) {
  const userId = pathParam('uuid', { type: 'string', description: 'a user uuid or @me' });
  const eafId = pathParam('id', { type: 'string', format: 'uuid' });
  const flagId = pathParam('id', intId);
  const orgId = pathParam('id', { type: 'string', description: 'an organization id (uuid) or @current' });
  const memberId = pathParam('user_uuid', { type: 'string', description: "the member's user uuid, or @me" });
  return {
    openapi: '3.1.0',
    info: {
      title: 'Sett management API',
      version: '1.0.0',
      description:
        'PostHog-compatible management API. Authenticate with `Authorization: Bearer <personal API key>`.',
    },
    ...(serverUrl ? { servers: [{ url: serverUrl }] } : {}),
    paths: {
      '/api/users/': {
        get: operation({
          scope: 'user:read',
          summary: 'List users',
          parameters: [...limitOffset, { name: 'is_staff', in: 'query', schema: bool }],
          response: paginated('User'),
        }),
      },
      '/api/users/{uuid}/': {
        get: operation({
          scope: 'user:read',
          summary: 'Retrieve a user',
          parameters: [userId],
          response: ref('User'),
        }),
        patch: operation({
          scope: 'user:write',
          summary: 'Update a user',
          parameters: [userId],
          body: 'PatchedUser',
          response: ref('User'),
        }),
        delete: operation({
          scope: 'user:write',
          summary: 'Delete a user',
          parameters: [userId],
          status: 204,
          response: null,
        }),
      },
      '/api/users/{uuid}/hedgehog_config/': {
        get: operation({
          scope: 'user:read',
          summary: 'Read hedgehog config',
          parameters: [userId],
          response: ref('HedgehogConfig'),
        }),
        patch: operation({
          scope: 'user:write',
          summary: `Merge into hedgehog config (at most ${MAX_HEDGEHOG_CONFIG_BYTES} bytes of JSON after the merge)`,
          parameters: [userId],
          body: 'HedgehogConfig',
          response: ref('HedgehogConfig'),
        }),
      },
      '/api/users/{uuid}/scene_personalisation/': {
        post: operation({
          scope: 'user:write',
          summary: `Set the dashboard of a scene (at most ${MAX_SCENE_PERSONALISATIONS} scenes)`,
          parameters: [userId],
          body: 'ScenePersonalisation',
          response: ref('User'),
        }),
      },
      '/api/users/{uuid}/start_2fa_setup/': {
        get: operation({
          scope: 'user:write',
          summary: 'Start TOTP setup (returns the secret)',
          parameters: [userId],
          response: { type: 'object', properties: { success: bool, secret: str, otpauth_url: str } },
        }),
      },
      '/api/users/{uuid}/validate_2fa/': {
        post: operation({
          scope: 'user:write',
          summary: 'Confirm TOTP setup with a code',
          parameters: [userId],
          body: 'Validate2fa',
          response: { type: 'object', properties: { success: bool } },
        }),
      },
      '/api/users/{uuid}/two_factor_backup_codes/': {
        post: operation({
          scope: 'user:write',
          summary: 'New backup codes (invalidates the old ones)',
          parameters: [userId],
          response: { type: 'object', properties: { backup_codes: { type: 'array', items: str } } },
        }),
      },
      '/api/projects/': {
        get: operation({
          scope: 'project:read',
          summary: 'List projects',
          parameters: limitOffset,
          response: paginated('Project'),
        }),
        post: operation({
          scope: 'project:write',
          summary: 'Create a project in an organization where the caller is an admin or owner',
          body: 'ProjectCreate',
          status: 201,
          response: ref('Project'),
        }),
      },
      '/api/projects/{project_id}/': {
        get: operation({
          scope: 'project:read',
          summary: 'Retrieve a project',
          parameters: [project],
          response: ref('Project'),
        }),
        patch: operation({
          scope: 'project:write',
          summary: 'Update the name and SDK settings (remote config is rebuilt)',
          parameters: [project],
          body: 'PatchedProject',
          response: ref('Project'),
        }),
        delete: operation({
          scope: 'project:write',
          summary:
            'Delete a project (admins): gone for every API, capture and decide at once; its data is purged by a background job',
          parameters: [project],
          status: 204,
          response: null,
        }),
      },
      '/api/projects/{project_id}/reset_token/': {
        patch: operation({
          scope: 'project:write',
          summary:
            'New project API token (phc_); the old one stops working in capture and decide at once. Organization admins only (POST is accepted too).',
          parameters: [project],
          response: ref('Project'),
        }),
        post: operation({
          scope: 'project:write',
          summary: 'Same as PATCH reset_token.',
          parameters: [project],
          response: ref('Project'),
        }),
      },
      '/api/organizations/': {
        get: operation({
          scope: 'organization:read',
          summary: "List the caller's organizations",
          parameters: limitOffset,
          response: paginated('Organization'),
        }),
        post: operation({
          scope: 'organization:write',
          summary: 'Create an organization: the caller becomes its owner; a first project is created',
          body: 'OrganizationCreate',
          status: 201,
          response: ref('Organization'),
        }),
      },
      '/api/organizations/{id}/': {
        get: operation({
          scope: 'organization:read',
          summary: 'Retrieve an organization (members only)',
          parameters: [orgId],
          response: ref('Organization'),
        }),
        patch: operation({
          scope: 'organization:write',
          summary: 'Update an organization (admins and owners)',
          parameters: [orgId],
          body: 'PatchedOrganization',
          response: ref('Organization'),
        }),
        delete: operation({
          scope: 'organization:write',
          summary: 'Delete an organization (owners; 400 while it still has projects)',
          parameters: [orgId],
          status: 204,
          response: null,
        }),
      },
      '/api/organizations/{id}/members/': {
        get: operation({
          scope: 'organization_member:read',
          summary: 'List members (level ascending, newest first)',
          parameters: [orgId, ...limitOffset],
          response: paginated('OrganizationMember'),
        }),
        post: operation({
          scope: 'organization_member:write',
          summary: 'Add an existing user by e-mail (admins; up to their own level)',
          parameters: [orgId],
          body: 'OrganizationMemberCreate',
          status: 201,
          response: ref('OrganizationMember'),
        }),
      },
      '/api/organizations/{id}/members/{user_uuid}/': {
        get: operation({
          scope: 'organization_member:read',
          summary: 'Retrieve a member',
          parameters: [orgId, memberId],
          response: ref('OrganizationMember'),
        }),
        patch: operation({
          scope: 'organization_member:write',
          summary: "Change a member's level (admins; owners are changed only by owners; never one's own)",
          parameters: [orgId, memberId],
          body: 'PatchedOrganizationMember',
          response: ref('OrganizationMember'),
        }),
        delete: operation({
          scope: 'organization_member:write',
          summary: 'Remove a member, or leave (the user account stays; the last owner cannot leave)',
          parameters: [orgId, memberId],
          status: 204,
          response: null,
        }),
      },
      '/api/projects/{project_id}/rotate_secret_token/': {
        patch: operation({
          scope: 'project:write',
          summary:
            'New project secret API key (phs_), returned once in secret_api_token; the previous key stays valid as the backup. Organization admins only.',
          parameters: [project],
          response: ref('Project'),
        }),
      },
      '/api/projects/{project_id}/delete_secret_token_backup/': {
        patch: operation({
          scope: 'project:write',
          summary: 'Stop accepting the previous secret API key. Organization admins only.',
          parameters: [project],
          response: ref('Project'),
        }),
      },
      '/api/projects/{project_id}/early_access_feature/': {
        get: operation({
          scope: 'early_access_feature:read',
          summary: 'List early access features',
          parameters: [project, ...limitOffset],
          response: paginated('EarlyAccessFeature'),
        }),
        post: operation({
          scope: 'early_access_feature:write',
          summary: 'Create an early access feature',
          parameters: [project],
          body: 'EarlyAccessFeatureCreate',
          status: 201,
          response: ref('EarlyAccessFeature'),
        }),
      },
      '/api/projects/{project_id}/early_access_feature/{id}/': {
        get: operation({
          scope: 'early_access_feature:read',
          summary: 'Retrieve an early access feature',
          parameters: [project, eafId],
          response: ref('EarlyAccessFeature'),
        }),
        patch: operation({
          scope: 'early_access_feature:write',
          summary: 'Update an early access feature',
          parameters: [project, eafId],
          body: 'PatchedEarlyAccessFeature',
          response: ref('EarlyAccessFeature'),
        }),
        delete: operation({
          scope: 'early_access_feature:write',
          summary: 'Delete an early access feature',
          parameters: [project, eafId],
          status: 204,
          response: null,
        }),
      },
      '/api/projects/{project_id}/feature_flags/': {
        get: operation({
          scope: 'feature_flag:read',
          summary: 'List feature flags',
          parameters: [project, ...limitOffset],
          response: paginated('FeatureFlag'),
        }),
        post: operation({
          scope: 'feature_flag:write',
          summary: 'Create a feature flag',
          parameters: [project],
          body: 'FeatureFlagCreate',
          status: 201,
          response: ref('FeatureFlag'),
        }),
      },
      '/api/projects/{project_id}/feature_flags/{id}/': {
        get: operation({
          scope: 'feature_flag:read',
          summary: 'Retrieve a feature flag',
          parameters: [project, flagId],
          response: ref('FeatureFlag'),
        }),
        patch: operation({
          scope: 'feature_flag:write',
          summary: 'Update a feature flag',
          parameters: [project, flagId],
          body: 'PatchedFeatureFlag',
          response: ref('FeatureFlag'),
        }),
        delete: operation({
          scope: 'feature_flag:write',
          summary: 'Soft-delete a feature flag',
          parameters: [project, flagId],
          status: 204,
          response: null,
        }),
      },
      '/api/projects/{project_id}/feature_flags/{key}/remote_config': {
        get: {
          ...operation({
            scope: 'feature_flag:read',
            summary:
              "A remote configuration flag's payload, decrypted: its JSON text as a JSON string, or null. " +
              'Also takes the project secret key (phs_). project_id may be @current; ?token=<project API key> picks the project for @current.',
            parameters: [
              pathParam('project_id', { type: 'string', description: 'a project id or @current' }),
              pathParam('key', { type: 'string', description: 'a flag key or id' }),
              { name: 'token', in: 'query', schema: str },
            ],
            response: { type: ['string', 'null'] },
          }),
          security: [{ PersonalApiKey: ['feature_flag:read'] }, { ProjectSecretKey: [] }],
        },
      },
      '/api/projects/{project_id}/cohorts/': {
        get: operation({
          scope: 'cohort:read',
          summary: 'List cohorts',
          parameters: [project, ...limitOffset],
          response: paginated('Cohort'),
        }),
        post: operation({
          scope: 'cohort:write',
          summary: 'Create a cohort (a static one may come with a CSV of distinct ids)',
          parameters: [project],
          body: 'CohortCreate',
          multipart: csvUpload,
          status: 201,
          response: ref('Cohort'),
        }),
      },
      '/api/projects/{project_id}/cohorts/{id}/': {
        get: operation({
          scope: 'cohort:read',
          summary: 'Retrieve a cohort',
          parameters: [project, flagId],
          response: ref('Cohort'),
        }),
        patch: operation({
          scope: 'cohort:write',
          summary:
            'Update a cohort; {deleted: true} soft-deletes it. A CSV adds members to a static cohort. ' +
            'Refused: loops between cohorts, event criteria in a cohort active flags use, deleting a cohort that ' +
            'active flags or other cohorts use.',
          parameters: [project, flagId],
          body: 'PatchedCohort',
          multipart: csvUpload,
          response: ref('Cohort'),
        }),
        delete: operation({
          scope: 'cohort:write',
          summary: 'Soft-delete a cohort (PostHog answers 405 and deletes through PATCH; Sett does both)',
          parameters: [project, flagId],
          status: 204,
          response: null,
        }),
      },
      '/api/projects/{project_id}/cohorts/{id}/add_persons_to_static_cohort/': {
        patch: operation({
          scope: 'cohort:write',
          summary: 'Add members to a static cohort by distinct id (PostHog takes person uuids)',
          parameters: [project, flagId],
          body: 'CohortAddMembers',
          response: ref('Cohort'),
        }),
      },
      '/api/projects/{project_id}/cohorts/{id}/remove_person_from_static_cohort/': {
        patch: operation({
          scope: 'cohort:write',
          summary: 'Remove members from a static cohort by distinct id (absent ones are ignored)',
          parameters: [project, flagId],
          body: 'CohortRemoveMembers',
          response: ref('Cohort'),
        }),
      },
      '/api/projects/{project_id}/cohorts/{id}/members/': {
        get: operation({
          scope: 'cohort:read',
          summary: "A static cohort's distinct ids, in order",
          parameters: [project, flagId, ...limitOffset],
          response: {
            type: 'object',
            properties: {
              count: int,
              next: { type: ['string', 'null'], format: 'uri' },
              previous: { type: ['string', 'null'], format: 'uri' },
              results: { type: 'array', items: { type: 'object', properties: { distinct_id: str } } },
            },
          },
        }),
      },
      '/api/projects/{project_id}/events/': {
        get: operation({
          scope: 'query:read',
          summary: 'List events, newest first (cursor pagination)',
          parameters: [
            project,
            {
              name: 'limit',
              in: 'query',
              schema: { type: 'integer', minimum: 1, default: DEFAULT_LIMIT, maximum: MAX_LIMIT },
            },
            { name: 'cursor', in: 'query', schema: str, description: 'opaque, taken from next' },
            { name: 'event', in: 'query', schema: str },
            { name: 'distinct_id', in: 'query', schema: str },
            { name: 'after', in: 'query', schema: dt },
            { name: 'before', in: 'query', schema: dt },
          ],
          response: {
            type: 'object',
            properties: {
              next: { type: ['string', 'null'], format: 'uri' },
              previous: { type: ['string', 'null'] },
              results: { type: 'array', items: ref('Event') },
            },
          },
        }),
      },
      '/api/projects/{project_id}/persons/': {
        get: operation({
          scope: 'person:read',
          summary: 'List persons',
          parameters: [project, ...limitOffset, { name: 'distinct_id', in: 'query', schema: str }],
          response: paginated('Person'),
        }),
      },
      '/api/projects/{project_id}/persons/{uuid}/': {
        get: operation({
          scope: 'person:read',
          summary: 'Retrieve a person',
          parameters: [project, pathParam('uuid', { type: 'string', format: 'uuid' })],
          response: ref('Person'),
        }),
        delete: operation({
          scope: 'person:write',
          summary:
            'Delete a person and their distinct ids; with delete_events=true a job deletes their events (Location: the job)',
          parameters: [
            project,
            pathParam('uuid', { type: 'string', format: 'uuid' }),
            { name: 'delete_events', in: 'query', schema: { type: 'boolean' } },
          ],
          status: 202,
          response: null,
        }),
      },
      '/api/projects/{project_id}/persons/bulk_delete/': {
        post: operation({
          scope: 'person:write',
          summary:
            'Delete persons by uuid (ids) or by distinct id (distinct_ids), at most 1000 (Location: the job)',
          parameters: [project, { name: 'delete_events', in: 'query', schema: { type: 'boolean' } }],
          body: 'PersonBulkDelete',
          status: 202,
          response: null,
        }),
      },
      '/api/projects/{project_id}/persons/deletions/': {
        get: operation({
          scope: 'person:read',
          summary: 'List person deletion jobs, newest first',
          parameters: [project, ...limitOffset],
          response: paginated('PersonDeletion'),
        }),
      },
      '/api/projects/{project_id}/persons/deletions/{id}/': {
        get: operation({
          scope: 'person:read',
          summary: 'Retrieve a person deletion job',
          parameters: [project, pathParam('id', { type: 'integer' })],
          response: ref('PersonDeletion'),
        }),
      },
      '/api/personal_api_keys/': {
        get: operation({
          scope: 'personal_api_key:read',
          summary: "List the caller's personal API keys",
          parameters: limitOffset,
          response: paginated('PersonalApiKey'),
        }),
        post: operation({
          scope: 'personal_api_key:write',
          summary: 'Create a personal API key (value shown once)',
          body: 'PersonalApiKeyCreate',
          status: 201,
          response: ref('PersonalApiKey'),
        }),
      },
      '/api/personal_api_keys/{id}/': {
        get: operation({
          scope: 'personal_api_key:read',
          summary: 'Retrieve a personal API key',
          parameters: [pathParam('id')],
          response: ref('PersonalApiKey'),
        }),
        delete: operation({
          scope: 'personal_api_key:write',
          summary: 'Delete a personal API key',
          parameters: [pathParam('id')],
          status: 204,
          response: null,
        }),
      },
    },
    components: {
      schemas: { ...requestSchemas, ...responseSchemas },
      securitySchemes: {
        PersonalApiKey: {
          type: 'http',
          scheme: 'bearer',
          description: `Personal API key (phx_...). Scopes: ${[...SCOPES, '*'].join(', ')}`,
        },
        ProjectSecretKey: {
          type: 'http',
          scheme: 'bearer',
          description: 'Project secret API key (phs_...), accepted by remote_config only.',
        },
      },
    },
  };
}
