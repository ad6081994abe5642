// The response shapes of PostHog's decide/flags versions, built from one evaluation result.
// decide v4 and /flags v2+: `flags` keyed by flag key (spec 2.7). decide v3 and /flags without
// a version: `featureFlags` (every evaluated flag: variant, true or false) and
// `featureFlagPayloads` (enabled flags with a payload). decide v2: `featureFlags` with enabled
// flags only. decide without v (v1): `featureFlags` as a list of enabled keys. Pure.
import type { FlagResult } from '@sett/flags';

export type ResponseShape = 'v1' | 'v2' | 'v3' | 'v4';
export type Endpoint = 'decide' | 'flags';

export interface EvaluationOutcome {
  flags: Record<string, FlagResult>;
  errorsWhileComputingFlags: boolean;
  quotaLimited: boolean;
}

export interface FlagEntry {
  key: string;
  enabled: boolean;
  variant: string | null;
  reason: { code: string; condition_index: number | null; description: string };
  metadata: { id: number; version: number; description?: string; payload?: string };
}

/** Which shape a request gets, by endpoint and its `v` query parameter (as PostHog maps them). */
export function responseShape(endpoint: Endpoint, version: unknown): ResponseShape {
  const v = typeof version === 'string' && /^\d+$/.test(version) ? Number(version) : 0;
  if (endpoint === 'flags') return v >= 2 ? 'v4' : 'v3';
  if (v >= 4) return 'v4';
  if (v === 3) return 'v3';
  if (v === 2) return 'v2';
  return 'v1';
}

// Fields every decide answer carries; Sett has no toolbar, no session recording config and
// no authenticated sessions on this endpoint.
function envelope(outcome: EvaluationOutcome): Record<string, unknown> {
  return {
    config: { enable_collect_everything: true },
    toolbarParams: {},
    errorsWhileComputingFlags: outcome.errorsWhileComputingFlags,
    isAuthenticated: false,
    supportedCompression: ['gzip', 'lz64'],
  };
}

export function flagEntry(result: FlagResult): FlagEntry {
  const metadata: FlagEntry['metadata'] = { id: result.metadata.id, version: result.metadata.version };
  if (result.metadata.description !== undefined) metadata.description = result.metadata.description;
  if (result.metadata.payload !== undefined) metadata.payload = result.metadata.payload;
  return {
    key: result.key,
    enabled: result.enabled,
    // PostHog sends null for flags without a variant rather than leaving the key out.
    variant: result.variant ?? null,
    reason: {
      code: result.reason.code,
      condition_index: result.reason.condition_index,
      description: result.reason.description,
    },
    metadata,
  };
}

function flagValue(result: FlagResult): string | boolean {
  return result.enabled && result.variant !== undefined ? result.variant : result.enabled;
}

export function formatResponse(shape: ResponseShape, outcome: EvaluationOutcome): Record<string, unknown> {
  const body = envelope(outcome);
  const results = Object.values(outcome.flags);
  switch (shape) {
    case 'v4': {
      const flags: Record<string, FlagEntry> = {};
      for (const r of results) flags[r.key] = flagEntry(r);
      body.flags = flags;
      break;
    }
    case 'v3': {
      const featureFlags: Record<string, string | boolean> = {};
      const featureFlagPayloads: Record<string, string> = {};
      for (const r of results) {
        featureFlags[r.key] = flagValue(r);
        if (r.enabled && r.metadata.payload !== undefined) featureFlagPayloads[r.key] = r.metadata.payload;
      }
      body.featureFlags = featureFlags;
      body.featureFlagPayloads = featureFlagPayloads;
      break;
    }
    case 'v2': {
      const featureFlags: Record<string, string | boolean> = {};
      for (const r of results) if (r.enabled) featureFlags[r.key] = flagValue(r);
      body.featureFlags = featureFlags;
      break;
    }
    case 'v1':
      body.featureFlags = results.filter((r) => r.enabled).map((r) => r.key);
      break;
  }
  if (outcome.quotaLimited) body.quotaLimited = ['feature_flags'];
  return body;
}
