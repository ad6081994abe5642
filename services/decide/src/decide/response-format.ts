// The response shapes of PostHog's decide/flags versions, built from one evaluation result.
// decide v4 and /flags v2+: `flags` keyed by flag key (docs/interface.md, "Flag evaluation"). decide v3 and /flags without
// a version: `featureFlags` (every evaluated flag: variant, true or false) and
// `featureFlagPayloads` (enabled flags with a payload). decide v2: `featureFlags` with enabled
// flags only. decide without v (v1): `featureFlags` as a list of enabled keys. Every shape ends
// with `requestId` and `evaluatedAt` (PostHog's flags service), and with `config=true` the
// project's remote config fields merged in at the top level. Pure.
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
  // description: the flag's name (PostHog's UI calls it the description), null when empty.
  // payload: only when there is one. posthog-node 5 treats a null payload as a payload (it only
  // skips `undefined`), so sending null would make remote answers differ from local evaluation.
  metadata: { id: number; version: number; description: string | null; payload?: string };
}

/** Per response: PostHog's request id and evaluation time, and the remote config for `config=true`. */
export interface ResponseMeta {
  requestId: string;
  /** Milliseconds since the epoch. */
  evaluatedAt: number;
  /** The project's remote config document, merged in at the top level when the client asked. */
  remoteConfig?: Record<string, unknown>;
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
  const metadata: FlagEntry['metadata'] = {
    id: result.metadata.id,
    version: result.metadata.version,
    description: result.metadata.description ?? null,
  };
  if (result.metadata.payload !== undefined && result.metadata.payload !== null)
    metadata.payload = result.metadata.payload;
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

/** A map by flag key with no prototype, so a flag keyed `__proto__` is an entry like any other. */
function keyed<T>(): Record<string, T> {
  return Object.create(null) as Record<string, T>;
}

export function formatResponse(
  shape: ResponseShape,
  outcome: EvaluationOutcome,
  meta: ResponseMeta,
): Record<string, unknown> {
  const body = envelope(outcome);
  const results = Object.values(outcome.flags);
  switch (shape) {
    case 'v4': {
      const flags = keyed<FlagEntry>();
      for (const r of results) flags[r.key] = flagEntry(r);
      body.flags = flags;
      break;
    }
    case 'v3': {
      const featureFlags = keyed<string | boolean>();
      const featureFlagPayloads = keyed<string>();
      for (const r of results) {
        featureFlags[r.key] = flagValue(r);
        if (r.enabled && r.metadata.payload !== undefined) featureFlagPayloads[r.key] = r.metadata.payload;
      }
      body.featureFlags = featureFlags;
      body.featureFlagPayloads = featureFlagPayloads;
      break;
    }
    case 'v2': {
      const featureFlags = keyed<string | boolean>();
      for (const r of results) if (r.enabled) featureFlags[r.key] = flagValue(r);
      body.featureFlags = featureFlags;
      break;
    }
    case 'v1':
      body.featureFlags = results.filter((r) => r.enabled).map((r) => r.key);
      break;
  }
  if (outcome.quotaLimited) body.quotaLimited = ['feature_flags'];
  body.requestId = meta.requestId;
  body.evaluatedAt = meta.evaluatedAt;
  // Fields both have (supportedCompression) take the remote config's value in place.
  if (meta.remoteConfig) for (const [k, v] of Object.entries(meta.remoteConfig)) body[k] = v;
  return body;
}

// The serialised answer, byte for byte JSON.stringify(formatResponse(shape, outcome, meta)). v4 (the
// hot shape) is written straight into one string: the envelope is constant, and a flag's reason
// and metadata are objects shared by every result with the same outcome (see @sett/flags), so
// their JSON is cached per object and a response is mostly concatenation of ready fragments.
const ENVELOPE_V4_OK =
  '{"config":{"enable_collect_everything":true},"toolbarParams":{},"errorsWhileComputingFlags":false,' +
  '"isAuthenticated":false,"supportedCompression":["gzip","lz64"],"flags":{';
const ENVELOPE_V4_ERRORS = ENVELOPE_V4_OK.replace(
  '"errorsWhileComputingFlags":false',
  '"errorsWhileComputingFlags":true',
);
const QUOTA_LIMITED_TAIL = '},"quotaLimited":["feature_flags"]';

const reasonJsonCache = new WeakMap<object, string>();
const metadataJsonCache = new WeakMap<object, string>();
// Flag key -> its JSON prefix `"key":{"key":"key","enabled":`; bounded, flag keys are few.
const KEY_CACHE_MAX = 100_000;
const keyPrefixCache = new Map<string, string>();

function reasonJson(reason: FlagResult['reason']): string {
  let json = reasonJsonCache.get(reason);
  if (json === undefined) {
    json = `{"code":${JSON.stringify(reason.code)},"condition_index":${JSON.stringify(reason.condition_index)},"description":${JSON.stringify(reason.description)}}`;
    reasonJsonCache.set(reason, json);
  }
  return json;
}

// flagEntry's field order: id, version, description (null when absent), payload (left out when absent).
function metadataJson(metadata: FlagResult['metadata']): string {
  let json = metadataJsonCache.get(metadata);
  if (json === undefined) {
    json =
      `{"id":${JSON.stringify(metadata.id)},"version":${JSON.stringify(metadata.version)}` +
      `,"description":${JSON.stringify(metadata.description ?? null)}` +
      (metadata.payload === undefined || metadata.payload === null
        ? '}'
        : `,"payload":${JSON.stringify(metadata.payload)}}`);
    metadataJsonCache.set(metadata, json);
  }
  return json;
}

function keyPrefix(key: string): string {
  let prefix = keyPrefixCache.get(key);
  if (prefix === undefined) {
    const quoted = JSON.stringify(key);
    prefix = `${quoted}:{"key":${quoted},"enabled":`;
    if (keyPrefixCache.size >= KEY_CACHE_MAX) keyPrefixCache.clear();
    keyPrefixCache.set(key, prefix);
  }
  return prefix;
}

/** One flag's `"key":{…}` text, cached per (metadata, reason) object pair: both are shared by
 * every result with the same outcome, so a flag list has a handful of distinct fragments. */
interface Fragment {
  key: string;
  enabled: boolean;
  variant: string | undefined;
  json: string;
}
const fragmentCache = new WeakMap<object, Map<object, Fragment>>();
/** Distinct reasons one metadata object is met with (bounded: reasons are per condition). */
const FRAGMENTS_PER_METADATA = 64;

function flagFragment(r: FlagResult): string {
  let byReason = fragmentCache.get(r.metadata);
  if (byReason === undefined) fragmentCache.set(r.metadata, (byReason = new Map()));
  const hit = byReason.get(r.reason);
  if (hit !== undefined && hit.key === r.key && hit.enabled === r.enabled && hit.variant === r.variant)
    return hit.json;
  const json =
    keyPrefix(r.key) +
    (r.enabled ? 'true' : 'false') +
    ',"variant":' +
    (r.variant === undefined ? 'null' : JSON.stringify(r.variant)) +
    ',"reason":' +
    reasonJson(r.reason) +
    ',"metadata":' +
    metadataJson(r.metadata) +
    '}';
  if (byReason.size < FRAGMENTS_PER_METADATA)
    byReason.set(r.reason, { key: r.key, enabled: r.enabled, variant: r.variant, json });
  return json;
}

export function formatResponseJson(
  shape: ResponseShape,
  outcome: EvaluationOutcome,
  meta: ResponseMeta,
): string {
  // Other shapes, and config=true (its merged fields change the envelope), go the plain way.
  if (shape !== 'v4' || meta.remoteConfig) return JSON.stringify(formatResponse(shape, outcome, meta));
  // Object.values order is the order the object form's `flags` is filled in, so the key order
  // of the two serialisations agrees (integer-like keys first, as JavaScript orders them).
  const results = Object.values(outcome.flags);
  const n = results.length;
  // [envelope, fragment, ',', fragment, …, tail]
  const parts = new Array<string>(n === 0 ? 2 : 2 * n + 1);
  parts[0] = outcome.errorsWhileComputingFlags ? ENVELOPE_V4_ERRORS : ENVELOPE_V4_OK;
  for (let i = 0; i < n; i++) {
    if (i > 0) parts[2 * i] = ',';
    parts[2 * i + 1] = flagFragment(results[i]!);
  }
  // requestId is a UUID (no characters to escape), evaluatedAt an integer.
  parts[parts.length - 1] =
    (outcome.quotaLimited ? QUOTA_LIMITED_TAIL : '}') +
    ',"requestId":"' +
    meta.requestId +
    '","evaluatedAt":' +
    meta.evaluatedAt +
    '}';
  // One join: the answer is built flat, not as a chain of concatenations flattened on write.
  return parts.join('');
}
