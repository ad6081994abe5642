// The remote config document SDKs load on every page view (`/array/<token>/config` and
// `config.js`), built from a project's SDK settings, with PostHog's field names and order
// (posthog/models/remote_config.py build_config). Pure: the store gathers the inputs.
// Sett has no session recordings, surveys, site apps or error tracking suppression rules, so
// those parts are always off or empty, whatever the project stores.
import { WEB_VITALS_METRICS } from '@sett/schemas';

/** What the document is built from: one row of teams, plus whether /flags has anything to evaluate. */
export interface RemoteConfigInputs {
  token: string;
  autocaptureOptOut: boolean;
  autocaptureExceptionsOptIn: boolean;
  heatmapsOptIn: boolean;
  capturePerformanceOptIn: boolean;
  autocaptureWebVitalsOptIn: boolean;
  /** Stored JSON: null (every metric) or a list of metric names. */
  autocaptureWebVitalsAllowedMetrics: unknown;
  captureDeadClicks: boolean;
  sessionRecordingOptIn: boolean;
  surveysOptIn: boolean;
  /** An active, not deleted flag that /flags evaluates (remote configuration flags excluded). */
  hasFeatureFlags: boolean;
}

export type RemoteConfig = Record<string, unknown> & { token: string; hasFeatureFlags: boolean };

export function buildRemoteConfig(inputs: RemoteConfigInputs): RemoteConfig {
  const capturePerformance =
    inputs.capturePerformanceOptIn || inputs.autocaptureWebVitalsOptIn
      ? {
          network_timing: inputs.capturePerformanceOptIn,
          web_vitals: inputs.autocaptureWebVitalsOptIn,
          web_vitals_allowed_metrics: allowedMetrics(inputs.autocaptureWebVitalsAllowedMetrics),
        }
      : false;
  return {
    token: inputs.token,
    supportedCompression: ['gzip', 'gzip-js'],
    // Always an explicit boolean: Android reads a missing value as false and clears its flags.
    hasFeatureFlags: inputs.hasFeatureFlags === true,
    captureDeadClicks: inputs.captureDeadClicks,
    capturePerformance,
    autocapture_opt_out: inputs.autocaptureOptOut,
    autocaptureExceptions: inputs.autocaptureExceptionsOptIn,
    analytics: { endpoint: '/i/v0/e/' },
    elementsChainAsString: true,
    errorTracking: { autocaptureExceptions: inputs.autocaptureExceptionsOptIn, suppressionRules: [] },
    // session_recording_opt_in is stored for PostHog compatibility only: Sett keeps no recordings.
    sessionRecording: false,
    heatmaps: inputs.heatmapsOptIn,
    // PostHog sends false when a project has no surveys to show; Sett has none.
    surveys: false,
    defaultIdentifiedOnly: true,
    siteApps: [],
  };
}

/**
 * What `/flags?config=true` merges in when the document cannot be read (Redis and Postgres
 * failing): everything optional off, as PostHog's flags service does on a cache miss.
 */
export function fallbackRemoteConfig(token: string, hasFeatureFlags: boolean): RemoteConfig {
  return {
    token,
    hasFeatureFlags,
    supportedCompression: ['gzip', 'gzip-js'],
    sessionRecording: false,
    surveys: false,
    heatmaps: false,
    capturePerformance: false,
    autocaptureExceptions: false,
  };
}

function allowedMetrics(stored: unknown): string[] | null {
  if (!Array.isArray(stored)) return null;
  return stored.filter(
    (m): m is string => typeof m === 'string' && (WEB_VITALS_METRICS as readonly string[]).includes(m),
  );
}

/** A token that may appear in `/array/<token>/...` (PostHog's rule); anything else is a 400. */
export function isRemoteConfigToken(token: string): boolean {
  return token.length > 0 && token.length <= 200 && /^[a-zA-Z0-9_-]+$/.test(token);
}

/**
 * The `config.js` script: registers the document under its token for posthog-js to read, in
 * PostHog's layout. The token is safe inside the quotes (isRemoteConfigToken); `siteApps` moves
 * out of `config` into the script's own list of loaders (empty: Sett has no site apps).
 */
export function remoteConfigScript(config: RemoteConfig): string {
  const { siteApps: _siteApps, ...rest } = config;
  return `(function() {
  window._POSTHOG_REMOTE_CONFIG = window._POSTHOG_REMOTE_CONFIG || {};
  window._POSTHOG_REMOTE_CONFIG['${config.token}'] = {
    config: ${JSON.stringify(rest)},
    siteApps: []
  }
})();`;
}

/** Reads a stored document back; undefined when it is not one (a miss, rebuilt from Postgres). */
export function decodeRemoteConfig(raw: string | null): RemoteConfig | undefined {
  if (raw === null) return undefined;
  try {
    const v = JSON.parse(raw) as Record<string, unknown>;
    if (v && typeof v.token === 'string' && typeof v.hasFeatureFlags === 'boolean') return v as RemoteConfig;
  } catch {
    // corrupt: a miss
  }
  return undefined;
}
