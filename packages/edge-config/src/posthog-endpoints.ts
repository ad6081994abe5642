// PostHog's public and management endpoints, maintained by hand from PostHog's URL
// configuration and API routers, so that docs/compatibility.md can say for each one whether
// Sett serves it. Sett's own routes come from the route tables; this list is what they are held
// against. Resources Sett serves are listed endpoint by endpoint (their extra actions included);
// the rest as whole subtrees (`…`). `/api/environments/{id}/…` mirrors `/api/projects/{id}/…` in
// PostHog for the resources that have both; it is listed where Sett serves the resource.
export interface PosthogEndpoint {
  methods: Array<'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE'>;
  /** PostHog's path with `{param}` placeholders; ending in `/…`: everything under it. */
  path: string;
  area: 'public' | 'management';
  summary: string;
}

const crud = (
  path: string,
  summary: string,
  area: PosthogEndpoint['area'] = 'management',
): PosthogEndpoint[] => [
  { methods: ['GET', 'POST'], path: `${path}/`, area, summary: `${summary}: list and create` },
  { methods: ['GET', 'PATCH', 'DELETE'], path: `${path}/{id}/`, area, summary: `${summary}: one` },
];

const subtree = (path: string, summary: string): PosthogEndpoint => ({
  methods: ['GET', 'POST', 'PATCH', 'DELETE'],
  path: `${path}/…`,
  area: 'management',
  summary,
});

const P = '/api/projects/{project_id}';
const E = '/api/environments/{project_id}';

export const POSTHOG_ENDPOINTS: PosthogEndpoint[] = [
  // ---- public: what SDKs call, with the project token ----
  { methods: ['POST'], path: '/i/v0/e/', area: 'public', summary: 'Capture events (current SDKs)' },
  {
    methods: ['GET'],
    path: '/i/v0/e/',
    area: 'public',
    summary: 'Capture events sent in the query string (`data=`)',
  },
  { methods: ['POST'], path: '/e/', area: 'public', summary: 'Capture events' },
  {
    methods: ['GET'],
    path: '/e/',
    area: 'public',
    summary: 'Capture events sent in the query string (`data=`)',
  },
  { methods: ['POST'], path: '/capture/', area: 'public', summary: 'Capture events' },
  { methods: ['POST'], path: '/track/', area: 'public', summary: 'Capture events' },
  { methods: ['POST'], path: '/batch/', area: 'public', summary: 'Capture a batch of events' },
  { methods: ['POST'], path: '/engage/', area: 'public', summary: 'Legacy person updates' },
  { methods: ['POST'], path: '/s/', area: 'public', summary: 'Session recording snapshots' },
  { methods: ['POST'], path: '/i/v0/ai/', area: 'public', summary: 'LLM analytics events with blobs' },
  { methods: ['POST'], path: '/report/', area: 'public', summary: 'CSP violation reports' },
  { methods: ['POST'], path: '/decide/', area: 'public', summary: 'Flags and settings for an SDK (v3, v4)' },
  { methods: ['POST'], path: '/flags/', area: 'public', summary: 'Flag evaluation (v1, v2)' },
  {
    methods: ['GET'],
    path: '/flags/definitions/',
    area: 'public',
    summary: 'Flag definitions for local evaluation',
  },
  {
    methods: ['GET'],
    path: '/api/feature_flag/local_evaluation/',
    area: 'public',
    summary: 'Flag definitions for local evaluation (secret or personal key)',
  },
  { methods: ['GET'], path: '/array/{token}/config', area: 'public', summary: 'Remote config (JSON)' },
  { methods: ['GET'], path: '/array/{token}/config.js', area: 'public', summary: 'Remote config (script)' },
  {
    methods: ['GET'],
    path: '/array/{token}/array.js',
    area: 'public',
    summary: 'posthog-js bundled with its config',
  },
  {
    methods: ['GET'],
    path: '/static/{file}',
    area: 'public',
    summary: 'posthog-js files (array.js, recorder, surveys…)',
  },
  {
    methods: ['GET'],
    path: '/static/{version}/{file}',
    area: 'public',
    summary: 'posthog-js files of one version',
  },
  {
    methods: ['GET'],
    path: '/api/early_access_features/',
    area: 'public',
    summary: 'Early access features by project token',
  },
  { methods: ['GET'], path: '/api/surveys/', area: 'public', summary: 'Active surveys by project token' },
  {
    methods: ['GET'],
    path: '/api/web_experiments/',
    area: 'public',
    summary: 'Web experiments by project token',
  },
  {
    methods: ['GET'],
    path: '/api/product_tours/',
    area: 'public',
    summary: 'Product tours by project token',
  },

  // ---- management: personal API keys ----
  { methods: ['GET'], path: '/api/users/', area: 'management', summary: 'Users (staff)' },
  {
    methods: ['GET', 'PATCH', 'DELETE'],
    path: '/api/users/{uuid}/',
    area: 'management',
    summary: 'A user, `@me`',
  },
  {
    methods: ['GET', 'PATCH'],
    path: '/api/users/{uuid}/hedgehog_config/',
    area: 'management',
    summary: 'Hedgehog config',
  },
  {
    methods: ['POST'],
    path: '/api/users/{uuid}/scene_personalisation/',
    area: 'management',
    summary: 'Scene dashboards',
  },
  {
    methods: ['GET'],
    path: '/api/users/{uuid}/start_2fa_setup/',
    area: 'management',
    summary: 'Start 2FA set-up',
  },
  {
    methods: ['POST'],
    path: '/api/users/{uuid}/validate_2fa/',
    area: 'management',
    summary: 'Confirm 2FA set-up',
  },
  {
    methods: ['POST'],
    path: '/api/users/{uuid}/two_factor_backup_codes/',
    area: 'management',
    summary: 'New 2FA backup codes',
  },
  {
    methods: ['GET'],
    path: '/api/users/{uuid}/two_factor_status/',
    area: 'management',
    summary: '2FA status',
  },
  {
    methods: ['POST'],
    path: '/api/users/{uuid}/two_factor_disable/',
    area: 'management',
    summary: 'Turn 2FA off',
  },
  {
    methods: ['POST'],
    path: '/api/users/{uuid}/request_email_verification/',
    area: 'management',
    summary: 'E-mail verification',
  },
  ...crud('/api/personal_api_keys', 'Personal API keys'),
  {
    methods: ['GET'],
    path: '/api/personal_api_keys/@current/',
    area: 'management',
    summary: 'The calling key (introspection)',
  },
  {
    methods: ['POST'],
    path: '/api/personal_api_keys/{id}/roll/',
    area: 'management',
    summary: 'Roll a personal API key',
  },

  ...crud('/api/organizations', 'Organizations'),
  { methods: ['GET'], path: '/api/organizations/{id}/members/', area: 'management', summary: 'Members' },
  {
    methods: ['PATCH', 'DELETE'],
    path: '/api/organizations/{id}/members/{user_uuid}/',
    area: 'management',
    summary: 'A member: level, removal',
  },
  subtree('/api/organizations/{id}/invites', 'Invites'),
  subtree('/api/organizations/{id}/domains', 'Verified domains and SSO'),
  subtree('/api/organizations/{id}/proxy_records', 'Managed reverse proxies'),
  {
    methods: ['GET', 'POST'],
    path: '/api/organizations/{id}/projects/',
    area: 'management',
    summary: 'Projects of an organization',
  },
  {
    methods: ['GET'],
    path: '/api/organizations/{id}/projects/{project_id}/',
    area: 'management',
    summary: 'A project of an organization',
  },
  subtree('/api/organizations/{id}/batch_exports', 'Organization batch exports'),
  subtree('/api/organizations/{id}/plugins', 'Plugins and pipeline apps'),
  subtree('/api/organizations/{id}/feature_flags', 'Flags across projects'),
  subtree('/api/organizations/{id}/roles', 'Roles (access control)'),

  ...crud('/api/projects', 'Projects'),
  { methods: ['PATCH'], path: `${P}/reset_token/`, area: 'management', summary: 'New project API key' },
  { methods: ['PATCH'], path: `${P}/rotate_secret_token/`, area: 'management', summary: 'New secret key' },
  {
    methods: ['PATCH'],
    path: `${P}/delete_secret_token_backup/`,
    area: 'management',
    summary: 'Drop the previous secret key',
  },
  subtree(`${P}/environments`, 'Environments of a project'),
  subtree('/api/environments', 'Environments (teams) themselves'),

  ...crud(`${P}/feature_flags`, 'Feature flags'),
  {
    methods: ['GET'],
    path: `${P}/feature_flags/{id}/activity/`,
    area: 'management',
    summary: 'Flag history',
  },
  {
    methods: ['GET'],
    path: `${P}/feature_flags/activity/`,
    area: 'management',
    summary: 'History of all flags',
  },
  {
    methods: ['GET'],
    path: `${P}/feature_flags/my_flags/`,
    area: 'management',
    summary: "The caller's flag values",
  },
  {
    methods: ['GET'],
    path: `${P}/feature_flags/local_evaluation/`,
    area: 'management',
    summary: 'Local evaluation definitions (personal key)',
  },
  {
    methods: ['GET'],
    path: `${P}/feature_flags/evaluation_reasons/`,
    area: 'management',
    summary: 'Why each flag has its value for a person',
  },
  {
    methods: ['POST'],
    path: `${P}/feature_flags/user_blast_radius/`,
    area: 'management',
    summary: 'How many persons a condition reaches',
  },
  {
    methods: ['POST'],
    path: `${P}/feature_flags/bulk_keys/`,
    area: 'management',
    summary: 'Flag keys by id',
  },
  {
    methods: ['GET'],
    path: `${P}/feature_flags/{key}/remote_config/`,
    area: 'management',
    summary: 'Decrypted remote config payload',
  },
  {
    methods: ['POST'],
    path: `${P}/feature_flags/{id}/create_static_cohort_for_flag/`,
    area: 'management',
    summary: 'Static cohort of the persons a flag matches',
  },
  subtree(`${P}/feature_flags/{id}/dashboard`, 'Flag usage dashboard'),

  ...crud(`${P}/early_access_feature`, 'Early access features'),

  ...crud(`${P}/cohorts`, 'Cohorts'),
  {
    methods: ['PATCH'],
    path: `${P}/cohorts/{id}/add_persons_to_static_cohort/`,
    area: 'management',
    summary: 'Add persons to a static cohort',
  },
  {
    methods: ['PATCH'],
    path: `${P}/cohorts/{id}/remove_person_from_static_cohort/`,
    area: 'management',
    summary: 'Remove a person from a static cohort',
  },
  {
    methods: ['GET'],
    path: `${P}/cohorts/{id}/persons/`,
    area: 'management',
    summary: 'Persons in a cohort',
  },
  { methods: ['GET'], path: `${P}/cohorts/{id}/activity/`, area: 'management', summary: 'Cohort history' },
  {
    methods: ['GET'],
    path: `${P}/cohorts/{id}/duplicate_as_static_cohort/`,
    area: 'management',
    summary: 'Copy as a static cohort',
  },

  { methods: ['GET'], path: `${P}/persons/`, area: 'management', summary: 'Persons' },
  {
    methods: ['GET', 'PATCH', 'DELETE'],
    path: `${P}/persons/{id}/`,
    area: 'management',
    summary: 'A person',
  },
  {
    methods: ['POST'],
    path: `${P}/persons/bulk_delete/`,
    area: 'management',
    summary: 'Delete many persons',
  },
  {
    methods: ['POST'],
    path: `${P}/persons/{id}/update_property/`,
    area: 'management',
    summary: 'Set a property',
  },
  {
    methods: ['POST'],
    path: `${P}/persons/{id}/delete_property/`,
    area: 'management',
    summary: 'Unset a property',
  },
  {
    methods: ['POST'],
    path: `${P}/persons/{id}/split/`,
    area: 'management',
    summary: 'Split merged persons',
  },
  { methods: ['GET'], path: `${P}/persons/{id}/activity/`, area: 'management', summary: 'Person history' },
  {
    methods: ['GET'],
    path: `${P}/persons/values/`,
    area: 'management',
    summary: 'Values of a person property',
  },
  { methods: ['GET'], path: `${P}/persons/cohorts/`, area: 'management', summary: "A person's cohorts" },
  subtree(`${P}/persons/funnel`, 'Persons in a funnel step (legacy)'),
  subtree(`${P}/persons/trends`, 'Persons in a trend (legacy)'),
  subtree(`${E}/persons`, 'Persons (environment paths)'),

  { methods: ['GET'], path: `${P}/events/`, area: 'management', summary: 'Events' },
  { methods: ['GET'], path: `${P}/events/{id}/`, area: 'management', summary: 'An event' },
  {
    methods: ['GET'],
    path: `${P}/events/values/`,
    area: 'management',
    summary: 'Values of an event property',
  },
  subtree(`${E}/events`, 'Events (environment paths)'),

  {
    methods: ['POST'],
    path: `${P}/query/`,
    area: 'management',
    summary: 'Run a query (HogQL and query nodes)',
  },
  { methods: ['POST'], path: `${E}/query/`, area: 'management', summary: 'Run a query (environment path)' },
  subtree(`${P}/query/{id}`, 'Query status and cancellation'),
  { methods: ['GET'], path: `${P}/event_definitions/`, area: 'management', summary: 'Event definitions' },
  {
    methods: ['GET', 'DELETE'],
    path: `${P}/event_definitions/{id}/`,
    area: 'management',
    summary: 'An event definition',
  },
  {
    methods: ['PATCH'],
    path: `${P}/event_definitions/{id}/`,
    area: 'management',
    summary: 'Event definition metadata (description, tags, verified)',
  },
  {
    methods: ['GET'],
    path: `${P}/property_definitions/`,
    area: 'management',
    summary: 'Property definitions',
  },
  {
    methods: ['GET', 'DELETE'],
    path: `${P}/property_definitions/{id}/`,
    area: 'management',
    summary: 'A property definition',
  },
  {
    methods: ['PATCH'],
    path: `${P}/property_definitions/{id}/`,
    area: 'management',
    summary: 'Property definition metadata (description, tags, type override)',
  },
  subtree(`${E}/event_definitions`, 'Event definitions (environment paths)'),
  subtree(`${E}/property_definitions`, 'Property definitions (environment paths)'),

  subtree(`${P}/insights`, 'Insights (saved queries and their sharing, thresholds)'),
  subtree(`${P}/dashboards`, 'Dashboards'),
  subtree(`${P}/dashboard_templates`, 'Dashboard templates'),
  subtree(`${P}/actions`, 'Actions'),
  subtree(`${P}/annotations`, 'Annotations'),
  subtree(`${P}/experiments`, 'Experiments'),
  subtree(`${P}/experiment_holdouts`, 'Experiment holdouts'),
  subtree(`${P}/experiment_saved_metrics`, 'Experiment metrics'),
  subtree(`${P}/surveys`, 'Surveys (management)'),
  subtree(`${P}/web_experiments`, 'Web experiments (management)'),
  subtree(`${P}/session_recordings`, 'Session recordings'),
  subtree(`${P}/session_recording_playlists`, 'Recording playlists'),
  subtree(`${P}/heatmaps`, 'Heatmaps'),
  subtree(`${P}/groups`, 'Groups'),
  subtree(`${P}/groups_types`, 'Group types'),
  subtree(`${P}/elements`, 'Autocapture elements'),
  subtree(`${P}/sessions`, 'Sessions'),
  subtree(`${P}/activity_log`, 'Activity log'),
  subtree(`${P}/comments`, 'Comments'),
  subtree(`${P}/notebooks`, 'Notebooks'),
  subtree(`${P}/tags`, 'Tags'),
  subtree(`${P}/uploaded_media`, 'Uploaded media'),
  subtree(`${P}/exports`, 'Exported assets'),
  subtree(`${P}/batch_exports`, 'Batch exports'),
  subtree(`${P}/hog_functions`, 'CDP destinations and transformations'),
  subtree(`${P}/hog_flows`, 'Workflows'),
  subtree(`${P}/plugin_configs`, 'Plugin configurations'),
  subtree(`${P}/integrations`, 'Integrations'),
  subtree(`${P}/alerts`, 'Alerts'),
  subtree(`${P}/subscriptions`, 'Subscriptions'),
  subtree(`${P}/ingestion_warnings`, 'Ingestion warnings'),
  subtree(`${P}/app_metrics`, 'App metrics'),
  subtree(`${P}/data_management`, 'Data management'),
  subtree(`${P}/scheduled_changes`, 'Scheduled flag changes'),
  subtree(`${P}/file_system`, 'Project tree'),
  subtree(`${P}/search`, 'Search'),
  subtree(`${P}/web_analytics`, 'Web analytics'),
  subtree(`${P}/warehouse_tables`, 'Data warehouse'),
  subtree(`${P}/external_data_sources`, 'Data warehouse sources'),
  subtree(`${P}/managed_migrations`, 'Managed migrations (imports)'),
  subtree(`${E}/error_tracking`, 'Error tracking'),
  subtree(`${E}/logs`, 'Logs'),
  subtree('/api/login', 'Session login (the web app)'),
  subtree('/api/signup', 'Sign-up (the web app)'),
  subtree('/api/instance_status', 'Instance status (self-hosted admin)'),
  subtree('/api/instance_settings', 'Instance settings (self-hosted admin)'),
  subtree('/api/billing', 'Billing'),
];
