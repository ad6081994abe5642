// The value of every message on the ingestion topics (capture -> ingestion), its JSON encoding,
// a decoder that never throws (a bad message goes to the dead letter topic, it must not crash a
// consumer), and the shape of dead letter messages.
import { isUtf8 } from 'node:buffer';

export type CaptureMessage = {
  uuid: string;
  token: string;
  distinct_id: string;
  ip: string | null;
  now: string;
  sent_at: string | null;
  event: string;
  properties: Record<string, unknown>;
  timestamp: string | null;
  historical_migration: boolean;
};

export type DecodeResult = { ok: true; message: CaptureMessage } | { ok: false; reason: string };

/** Fixed field order, so equal messages encode to equal bytes. */
export function encodeCaptureMessage(message: CaptureMessage): string {
  return JSON.stringify({
    uuid: message.uuid,
    token: message.token,
    distinct_id: message.distinct_id,
    ip: message.ip,
    now: message.now,
    sent_at: message.sent_at,
    event: message.event,
    properties: message.properties,
    timestamp: message.timestamp,
    historical_migration: message.historical_migration,
  });
}

const isPlainObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * Parses and validates a message value. Absent nullable fields read as null and an absent
 * historical_migration as false (JSON writers may drop them); everything else must be present
 * with the right type. Unknown extra fields are ignored.
 */
export function decodeCaptureMessage(value: Buffer | string | null | undefined): DecodeResult {
  if (value === null || value === undefined || value.length === 0)
    return { ok: false, reason: 'empty message value' };
  let parsed: unknown;
  try {
    parsed = JSON.parse(typeof value === 'string' ? value : value.toString('utf8'));
  } catch (error) {
    return { ok: false, reason: `invalid JSON: ${(error as Error).message}` };
  }
  if (!isPlainObject(parsed)) return { ok: false, reason: 'message value is not a JSON object' };

  for (const field of ['uuid', 'token', 'distinct_id', 'event'] as const) {
    const v = parsed[field];
    if (typeof v !== 'string' || v.length === 0)
      return { ok: false, reason: `${field} must be a non-empty string` };
  }
  if (typeof parsed.now !== 'string') return { ok: false, reason: 'now must be a string' };
  for (const field of ['ip', 'sent_at', 'timestamp'] as const) {
    const v = parsed[field];
    if (v !== undefined && v !== null && typeof v !== 'string')
      return { ok: false, reason: `${field} must be a string or null` };
  }
  if (!isPlainObject(parsed.properties)) return { ok: false, reason: 'properties must be a JSON object' };
  const historical = parsed.historical_migration;
  if (historical !== undefined && typeof historical !== 'boolean')
    return { ok: false, reason: 'historical_migration must be a boolean' };

  return {
    ok: true,
    message: {
      uuid: parsed.uuid as string,
      token: parsed.token as string,
      distinct_id: parsed.distinct_id as string,
      ip: (parsed.ip as string | null | undefined) ?? null,
      now: parsed.now,
      sent_at: (parsed.sent_at as string | null | undefined) ?? null,
      event: parsed.event as string,
      properties: parsed.properties,
      timestamp: (parsed.timestamp as string | null | undefined) ?? null,
      historical_migration: historical ?? false,
    },
  };
}

/** What ingestion writes to events_dead_letter: where the message was, why it failed, and the
 * original bytes (as text when they are valid UTF-8, else base64, see value_encoding). */
export type DeadLetterMessage = {
  topic: string;
  partition: number;
  offset: string;
  reason: string;
  value: string | null;
  value_encoding: 'utf8' | 'base64';
  failed_at: string;
  /**
   * Set when the original was too large to wrap within the Kafka message limit: `value` then
   * holds only its beginning, `value_bytes` its full size, and the whole original stays in the
   * source topic at `topic`/`partition`/`offset` until retention removes it.
   */
  value_truncated?: true;
  value_bytes?: number;
};

export function createDeadLetterMessage(input: {
  topic: string;
  partition: number;
  offset: string;
  reason: string;
  value: Buffer | string | null;
  failedAt?: Date;
}): DeadLetterMessage {
  const { value } = input;
  const asText = value === null || typeof value === 'string' || isUtf8(value);
  return {
    topic: input.topic,
    partition: input.partition,
    offset: input.offset,
    reason: input.reason,
    value:
      value === null ? null : typeof value === 'string' ? value : value.toString(asText ? 'utf8' : 'base64'),
    value_encoding: asText ? 'utf8' : 'base64',
    failed_at: (input.failedAt ?? new Date()).toISOString(),
  };
}

/** How much of an oversized original a truncated dead letter keeps (enough to recognise it). */
export const DEAD_LETTER_TRUNCATED_PREFIX = 64 * 1024;

/**
 * JSON of the dead letter, at most `maxBytes` long. Wrapping escapes the original (quotes
 * double), so a message near the broker's limit can come out over it; Kafka would refuse that
 * record and the partition could never move past it. Such a letter keeps a prefix of the value.
 */
export function encodeDeadLetterMessage(message: DeadLetterMessage, maxBytes = Infinity): string {
  const full = JSON.stringify(message);
  if (full.length <= maxBytes / 3 || Buffer.byteLength(full) <= maxBytes) return full;
  const value = message.value ?? '';
  return JSON.stringify({
    ...message,
    value: value.slice(0, Math.min(DEAD_LETTER_TRUNCATED_PREFIX, Math.floor(maxBytes / 8))),
    value_truncated: true,
    value_bytes:
      message.value_encoding === 'base64' ? Buffer.from(value, 'base64').length : Buffer.byteLength(value),
  });
}
