// Event time, PostHog's way: a client's clock may be off, so when the client says when it sent
// the request (sent_at) the event's offset from that send time is applied to the server's
// receive time (now): timestamp = now - (sent_at - timestamp). Historical migrations keep the
// given timestamp (those events were recorded long before they were sent). A missing or
// unusable timestamp becomes the receive time, with a warning.
import type { IngestionWarning } from './types';

/** PostHog's bound: an event more than 23 hours ahead of the receive time is not believed. */
export const MAX_FUTURE_MS = 23 * 3600 * 1000;
// Postgres prints and parses four-digit years; JS Dates outside that range serialize as
// "+010000-..." which timestamptz rejects, so such values count as invalid.
const MIN_TIME = Date.UTC(1, 0, 1);
const MAX_TIME = Date.UTC(9999, 11, 31, 23, 59, 59, 999);

export type TimestampInput = {
  timestamp: string | null;
  sentAt: string | null;
  now: string;
  historical: boolean;
  /** $ignore_sent_at: the client asks not to correct for skew. */
  ignoreSentAt?: boolean;
};

export type TimestampResult = { timestamp: Date; warnings: IngestionWarning[] };

function parse(value: string | null): Date | null {
  if (value === null || value.trim() === '') return null;
  const ms = Date.parse(value);
  if (!Number.isFinite(ms) || ms < MIN_TIME || ms > MAX_TIME) return null;
  return new Date(ms);
}

export function normalizeTimestamp(input: TimestampInput, clock: () => number = Date.now): TimestampResult {
  const warnings: IngestionWarning[] = [];
  let now = parse(input.now);
  if (!now) {
    warnings.push('now_invalid');
    now = new Date(clock());
  }
  if (input.timestamp === null || input.timestamp.trim() === '') {
    warnings.push('timestamp_missing');
    return { timestamp: now, warnings };
  }
  const given = parse(input.timestamp);
  if (!given) {
    warnings.push('timestamp_invalid');
    return { timestamp: now, warnings };
  }
  let result = given;
  if (!input.historical && !input.ignoreSentAt && input.sentAt !== null) {
    const sentAt = parse(input.sentAt);
    if (sentAt) result = new Date(now.getTime() - (sentAt.getTime() - given.getTime()));
    else warnings.push('sent_at_invalid');
  }
  if (result.getTime() < MIN_TIME || result.getTime() > MAX_TIME) {
    warnings.push('timestamp_invalid');
    return { timestamp: now, warnings };
  }
  if (!input.historical && result.getTime() - now.getTime() > MAX_FUTURE_MS) {
    warnings.push('timestamp_in_future');
    return { timestamp: now, warnings };
  }
  return { timestamp: result, warnings };
}
