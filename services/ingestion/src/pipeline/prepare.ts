// The per-message steps that need no I/O: decode the Kafka value, drop what spec section 7
// says is not ingested (no event name, no distinct_id), dead-letter what cannot be stored
// (bad JSON, wrong types, a uuid Postgres would reject), clean values Postgres cannot hold,
// and fix the timestamp.
import { decodeCaptureMessage } from '@sett/kafka';
import { normalizeTimestamp } from './timestamp';
import { dlq, drop, ok, type CaptureMessage, type PreparedEvent, type StepResult } from './types';

/** PostHog truncates event names (plugin-server) and distinct ids (capture) to 200 characters. */
export const MAX_NAME_LENGTH = 200;
const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

const isMissing = (v: unknown) => v === undefined || v === null || v === '';

/**
 * decodeCaptureMessage rejects a message without event or distinct_id like any malformed one;
 * ingestion must drop those quietly instead (they are valid requests, just not ingestible).
 * Only looked at when decoding failed, so the hot path parses each message once.
 */
export function decodeMessage(value: Buffer | null): StepResult<CaptureMessage> {
  const decoded = decodeCaptureMessage(value);
  if (decoded.ok) return ok(decoded.message);
  let parsed: unknown;
  try {
    parsed = value ? JSON.parse(value.toString('utf8')) : undefined;
  } catch {
    return dlq(decoded.reason);
  }
  if (typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed)) {
    const p = parsed as Record<string, unknown>;
    if (isMissing(p.event)) return drop('missing_event_name');
    if (isMissing(p.distinct_id)) return drop('missing_distinct_id');
  }
  return dlq(decoded.reason);
}

// Postgres text and jsonb cannot hold U+0000, and jsonb rejects lone surrogates: PostHog
// replaces NUL with U+FFFD; broken surrogate pairs get the same treatment (String#toWellFormed).
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;
// eslint-disable-next-line no-control-regex -- matching NUL is the point
const NEEDS_CLEANING = /\u0000|[\ud800-\udfff]/;
const ESCAPED_BAD = /\\u0000|\\ud[89a-f]/i;

export function cleanString(s: string): string {
  if (!NEEDS_CLEANING.test(s)) return s;
  // eslint-disable-next-line no-control-regex -- matching NUL is the point
  return s.replace(/\u0000/g, '\ufffd').replace(LONE_SURROGATE, '\ufffd');
}

export function cleanValue(value: unknown): unknown {
  if (typeof value === 'string') return cleanString(value);
  if (Array.isArray(value)) return value.map(cleanValue);
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[cleanString(k)] = cleanValue(v);
    return out;
  }
  return value;
}

export function validateMessage(
  message: CaptureMessage,
  offset: string,
  clock: () => number = Date.now,
): StepResult<PreparedEvent> {
  if (!UUID_RE.test(message.uuid))
    return dlq(`uuid is not a UUID: ${JSON.stringify(message.uuid.slice(0, 60))}`);
  const event = cleanString(message.event).slice(0, MAX_NAME_LENGTH);
  const distinctId = cleanString(message.distinct_id).slice(0, MAX_NAME_LENGTH);
  if (event.trim() === '') return drop('missing_event_name');
  if (distinctId.trim() === '') return drop('missing_distinct_id');

  let properties = message.properties;
  if (message.ip && properties.$ip === undefined) properties = { ...properties, $ip: message.ip };
  // Serialized once here for the bulk insert. JSON.stringify escapes NUL and lone surrogates
  // (as \u0000, \udXXX), so one test on its output decides whether a deep clean is needed.
  let propertiesJson = JSON.stringify(properties);
  if (ESCAPED_BAD.test(propertiesJson)) {
    properties = cleanValue(properties) as Record<string, unknown>;
    propertiesJson = JSON.stringify(properties);
  }

  const { timestamp, warnings } = normalizeTimestamp(
    {
      timestamp: message.timestamp,
      sentAt: message.sent_at,
      now: message.now,
      historical: message.historical_migration,
      ignoreSentAt: properties.$ignore_sent_at === true,
    },
    clock,
  );
  return ok({
    offset,
    uuid: message.uuid.toLowerCase(),
    token: message.token,
    distinctId,
    event,
    properties,
    propertiesJson,
    timestamp: timestamp.toISOString(),
    historical: message.historical_migration,
    processPerson: properties.$process_person_profile !== false,
    warnings,
  });
}

export function prepareMessage(
  value: Buffer | null,
  offset: string,
  clock: () => number = Date.now,
): StepResult<PreparedEvent> {
  const decoded = decodeMessage(value);
  if (decoded.kind !== 'ok') return decoded;
  return validateMessage(decoded.value, offset, clock);
}
