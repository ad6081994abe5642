// The per-message steps that need no I/O: decode the Kafka value, drop what is not
// ingested (no event name, no distinct_id: docs/interface.md, "Events that are not ingested"), dead-letter what cannot be stored
// (bad JSON, wrong types, a uuid Postgres would reject), clean values Postgres cannot hold,
// and fix the timestamp.
import { decodeCaptureMessage } from '@sett/kafka';
import { MAX_JSON_DEPTH, cleanJson, exceedsDepth, storedName, unstorableReason, isUuid } from '@sett/schemas';
import { normalizeTimestamp } from './timestamp';
import { dlq, drop, ok, type CaptureMessage, type PreparedEvent, type StepResult } from './types';

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

// Postgres text and jsonb cannot hold U+0000, and jsonb rejects lone surrogates: they become
// U+FFFD (@sett/schemas, docs/hardening.md). JSON.stringify escapes both (as \u0000, \udXXX), so
// one test on its output decides whether the (iterative) deep clean is needed at all.
const ESCAPED_BAD = /\\u0000|\\ud[89a-f]/i;

export function validateMessage(
  message: CaptureMessage,
  offset: string,
  clock: () => number = Date.now,
): StepResult<PreparedEvent> {
  if (!isUuid(message.uuid)) return dlq(`uuid is not a UUID: ${JSON.stringify(message.uuid.slice(0, 60))}`);
  // Cut first, then clean: the cut may split a surrogate pair.
  const event = storedName(message.event);
  const distinctId = storedName(message.distinct_id);
  if (event.trim() === '') return drop('missing_event_name');
  if (distinctId.trim() === '') return drop('missing_distinct_id');

  // A token Postgres cannot even compare with would fail the whole batch's token lookup.
  const tokenProblem = unstorableReason(message.token);
  if (tokenProblem) return dlq(`token holds an unstorable character (${tokenProblem})`);

  let properties = message.properties;
  // Before anything walks or serializes it: V8's JSON.stringify recurses and overflows the stack
  // on a few thousand levels (JSON.parse does not, so a message this deep does arrive here).
  if (exceedsDepth(properties, MAX_JSON_DEPTH))
    return dlq(`properties nest deeper than ${MAX_JSON_DEPTH} levels`);
  if (message.ip && properties.$ip === undefined) properties = { ...properties, $ip: message.ip };
  // Serialized once here for the bulk insert.
  let propertiesJson = JSON.stringify(properties);
  if (ESCAPED_BAD.test(propertiesJson)) {
    properties = cleanJson(properties);
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
