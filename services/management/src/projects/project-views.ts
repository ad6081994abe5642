// JSON shapes of teams (projects) and organizations: PostHog's field names (docs/interface.md,
// "Organizations and projects").
import type { Organization, Team } from '@sett/db';

/** What teamJson reads: a Prisma Team or a row of the hand-written read queries. */
export type TeamRow = Pick<
  Team,
  | 'id'
  | 'uuid'
  | 'organizationId'
  | 'apiToken'
  | 'name'
  | 'completedSnippetOnboarding'
  | 'hasCompletedOnboardingFor'
  | 'ingestedEvent'
  | 'isDemo'
  | 'timezone'
  | 'accessControl'
> & { projectId: bigint | number };

/** What organizationJson reads: a Prisma Organization or a row of the hand-written read queries. */
export type OrganizationRow = Pick<
  Organization,
  | 'id'
  | 'name'
  | 'slug'
  | 'logoMediaId'
  | 'createdAt'
  | 'updatedAt'
  | 'pluginsAccessLevel'
  | 'availableProductFeatures'
  | 'isMemberJoinEmailEnabled'
  | 'metadata'
  | 'customerId'
  | 'enforce2fa'
  | 'isAiDataProcessingApproved'
>;

export function teamJson(t: TeamRow) {
  return {
    id: t.id,
    uuid: t.uuid,
    organization: t.organizationId,
    project_id: Number(t.projectId),
    api_token: t.apiToken,
    name: t.name,
    completed_snippet_onboarding: t.completedSnippetOnboarding,
    has_completed_onboarding_for: t.hasCompletedOnboardingFor ?? null,
    ingested_event: t.ingestedEvent,
    is_demo: t.isDemo,
    timezone: t.timezone,
    access_control: t.accessControl,
  };
}

export type TeamJson = ReturnType<typeof teamJson>;

/**
 * Full organization (User.organization). membership_level is the CALLER's level in it (null
 * for staff looking at an organization they are not a member of); member_count is a string as
 * PostHog sends it.
 */
export function organizationJson(
  o: OrganizationRow,
  teams: TeamRow[],
  viewerLevel: number | null,
  memberCount: number,
) {
  return {
    id: o.id,
    name: o.name,
    slug: o.slug,
    logo_media_id: o.logoMediaId,
    created_at: o.createdAt.toISOString(),
    updated_at: o.updatedAt.toISOString(),
    membership_level: viewerLevel,
    plugins_access_level: o.pluginsAccessLevel,
    teams: teams.map(teamJson),
    projects: teams.map((t) => ({
      id: Number(t.projectId),
      organization_id: t.organizationId,
      name: t.name,
    })),
    available_product_features: Array.isArray(o.availableProductFeatures) ? o.availableProductFeatures : [],
    is_member_join_email_enabled: o.isMemberJoinEmailEnabled,
    metadata: o.metadata,
    customer_id: o.customerId,
    enforce_2fa: o.enforce2fa,
    member_count: String(memberCount),
    is_ai_data_processing_approved: o.isAiDataProcessingApproved,
  };
}

export function organizationSummaryJson(o: OrganizationRow, viewerLevel: number | null) {
  return {
    id: o.id,
    name: o.name,
    slug: o.slug,
    logo_media_id: o.logoMediaId,
    membership_level: viewerLevel,
  };
}

/**
 * A project as /api/projects/ answers it: the team, its SDK settings (what remote config is
 * built from) and the masked secret API key. The key itself is shown only by the rotation that
 * created it (`secret_api_token` in that response).
 */
export function projectJson(t: Team, secretApiToken?: string) {
  return {
    ...teamJson(t),
    autocapture_opt_out: t.autocaptureOptOut,
    autocapture_exceptions_opt_in: t.autocaptureExceptionsOptIn,
    heatmaps_opt_in: t.heatmapsOptIn,
    capture_performance_opt_in: t.capturePerformanceOptIn,
    autocapture_web_vitals_opt_in: t.autocaptureWebVitalsOptIn,
    autocapture_web_vitals_allowed_metrics: t.autocaptureWebVitalsAllowedMetrics ?? null,
    capture_dead_clicks: t.captureDeadClicks,
    session_recording_opt_in: t.sessionRecordingOptIn,
    surveys_opt_in: t.surveysOptIn,
    data_retention_days: t.dataRetentionDays,
    anonymize_ips: t.anonymizeIps,
    test_account_filters: t.testAccountFilters,
    geoip_enabled: t.geoipEnabled,
    secret_api_token_mask: t.secretApiTokenMask,
    has_secret_api_token_backup: t.secretApiTokenBackupHash !== null,
    ...(secretApiToken ? { secret_api_token: secretApiToken } : {}),
  };
}
