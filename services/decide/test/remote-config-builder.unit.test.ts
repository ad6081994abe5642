import {
  buildRemoteConfig,
  decodeRemoteConfig,
  isRemoteConfigToken,
  remoteConfigScript,
  type RemoteConfigInputs,
} from '../src/remote-config/remote-config-builder';

const defaults: RemoteConfigInputs = {
  token: 'phc_abc',
  autocaptureOptOut: false,
  autocaptureExceptionsOptIn: false,
  heatmapsOptIn: false,
  capturePerformanceOptIn: false,
  autocaptureWebVitalsOptIn: false,
  autocaptureWebVitalsAllowedMetrics: null,
  captureDeadClicks: false,
  sessionRecordingOptIn: false,
  surveysOptIn: false,
  hasFeatureFlags: false,
};

describe('buildRemoteConfig', () => {
  it("has PostHog's fields in PostHog's order", () => {
    expect(Object.keys(buildRemoteConfig(defaults))).toEqual([
      'token',
      'supportedCompression',
      'hasFeatureFlags',
      'captureDeadClicks',
      'capturePerformance',
      'autocapture_opt_out',
      'autocaptureExceptions',
      'analytics',
      'elementsChainAsString',
      'errorTracking',
      'sessionRecording',
      'heatmaps',
      'surveys',
      'defaultIdentifiedOnly',
      'siteApps',
    ]);
    expect(buildRemoteConfig(defaults).capturePerformance).toBe(false);
  });

  it('maps settings; recordings and surveys stay off whatever is stored', () => {
    const c = buildRemoteConfig({
      ...defaults,
      autocaptureOptOut: true,
      autocaptureExceptionsOptIn: true,
      heatmapsOptIn: true,
      capturePerformanceOptIn: true,
      autocaptureWebVitalsAllowedMetrics: ['LCP', 'TTFB', 3],
      captureDeadClicks: true,
      sessionRecordingOptIn: true,
      surveysOptIn: true,
      hasFeatureFlags: true,
    });
    expect(c).toMatchObject({
      hasFeatureFlags: true,
      captureDeadClicks: true,
      capturePerformance: { network_timing: true, web_vitals: false, web_vitals_allowed_metrics: ['LCP'] },
      autocapture_opt_out: true,
      autocaptureExceptions: true,
      errorTracking: { autocaptureExceptions: true, suppressionRules: [] },
      sessionRecording: false,
      heatmaps: true,
      surveys: false,
      siteApps: [],
    });
  });

  it('hasFeatureFlags is always a boolean', () => {
    expect(
      buildRemoteConfig({ ...defaults, hasFeatureFlags: undefined as unknown as boolean }).hasFeatureFlags,
    ).toBe(false);
  });
});

describe('remote config tokens and script', () => {
  it.each([
    ['phc_abc-DEF_123', true],
    ['a'.repeat(200), true],
    ['a'.repeat(201), false],
    ['', false],
    ['phc.abc', false],
    ["phc'abc", false],
  ])('%s -> %s', (token, ok) => expect(isRemoteConfigToken(token)).toBe(ok));

  it('the script registers the document under its token without siteApps in config', () => {
    const config = buildRemoteConfig(defaults);
    const window: { _POSTHOG_REMOTE_CONFIG?: Record<string, unknown> } = {
      _POSTHOG_REMOTE_CONFIG: { other: 1 },
    };
    new Function('window', remoteConfigScript(config))(window);
    const { siteApps: _siteApps, ...rest } = config;
    expect(window._POSTHOG_REMOTE_CONFIG).toEqual({ other: 1, phc_abc: { config: rest, siteApps: [] } });
  });

  it('decodes what it stores, and treats anything else as a miss', () => {
    const config = buildRemoteConfig(defaults);
    expect(decodeRemoteConfig(JSON.stringify(config))).toEqual(config);
    for (const raw of [null, '{', '{"token":1}', '[]', 'null'])
      expect(decodeRemoteConfig(raw)).toBeUndefined();
  });
});
