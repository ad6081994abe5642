// One raw event -> the CaptureMessage that goes to Kafka, or the reason it is dropped (no name,
// no distinct_id or an empty one -> not ingested, response still 200: docs/interface.md, "Events
// that are not ingested"). Pure.
import type { CaptureMessage } from '@sett/kafka';
import { v7 as uuidv7 } from 'uuid';
import type { RawEvent } from './unpack-body';
import { isUuid } from '@sett/schemas';

export type RequestContext = {
  token: string;
  ip: string | null;
  /** Server receive time, ISO 8601. */
  now: string;
  nowMs: number;
  /** Request-level sent_at (the `_` query parameter or the body's sent_at), ISO 8601. */
  sentAt: string | null;
  historical: boolean;
};

export type DropReason = 'missing_event_name' | 'missing_distinct_id' | 'too_large' | 'too_deep';

export type ToMessageResult = { ok: true; message: CaptureMessage } | { ok: false; reason: DropReason };

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

function distinctIdOf(e: RawEvent, props: Record<string, unknown>): string | null {
  const raw = e.distinct_id ?? props.distinct_id ?? e.$distinct_id;
  if (typeof raw === 'number') return Number.isFinite(raw) ? String(raw) : null;
  if (typeof raw === 'string' && raw.trim() !== '') return raw;
  return null;
}

/** PostHog's rules for sent_at: `_` (ms since epoch, posthog-js) first, then the body's sent_at. */
export function parseSentAt(queryUnderscore: unknown, bodySentAt: unknown): string | null {
  if (typeof queryUnderscore === 'string' && /^\d+(\.\d+)?$/.test(queryUnderscore)) {
    const d = new Date(Number(queryUnderscore));
    if (!Number.isNaN(d.getTime())) return d.toISOString();
  }
  if (typeof bodySentAt === 'string' && !Number.isNaN(Date.parse(bodySentAt))) return bodySentAt;
  return null;
}

export function toMessage(e: RawEvent, ctx: RequestContext): ToMessageResult {
  if (typeof e.event !== 'string' || e.event.trim() === '')
    return { ok: false, reason: 'missing_event_name' };
  let properties = isObject(e.properties) ? e.properties : {};
  const distinctId = distinctIdOf(e, properties);
  if (distinctId === null) return { ok: false, reason: 'missing_distinct_id' };

  // Top-level $set / $set_once (older SDKs) travel inside properties, which is all ingestion reads.
  if (isObject(e.$set) || isObject(e.$set_once)) {
    properties = { ...properties };
    if (isObject(e.$set))
      properties.$set = { ...e.$set, ...(isObject(properties.$set) ? properties.$set : {}) };
    if (isObject(e.$set_once))
      properties.$set_once = {
        ...e.$set_once,
        ...(isObject(properties.$set_once) ? properties.$set_once : {}),
      };
  }

  let timestamp = typeof e.timestamp === 'string' ? e.timestamp : null;
  // `offset` (ms before the request, posthog-js) stands in for a missing timestamp.
  if (timestamp === null && typeof e.offset === 'number' && Number.isFinite(e.offset)) {
    const t = new Date(ctx.nowMs - e.offset);
    if (!Number.isNaN(t.getTime())) timestamp = t.toISOString();
  }

  return {
    ok: true,
    message: {
      uuid: typeof e.uuid === 'string' && isUuid(e.uuid) ? e.uuid.toLowerCase() : uuidv7(),
      token: ctx.token,
      distinct_id: distinctId,
      // A historical batch is sent by a backfill (sett import, an SDK's historical migration),
      // not by the user's device: its address is the importer's, so it is not the event's $ip.
      // An $ip the source record carries in its properties is kept.
      ip: ctx.historical ? null : ctx.ip,
      now: ctx.now,
      sent_at: ctx.sentAt ?? parseSentAt(undefined, e.sent_at),
      event: e.event,
      properties,
      timestamp,
      historical_migration: ctx.historical,
    },
  };
}
