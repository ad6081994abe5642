// One input record -> the event `sett import` sends to /batch/, or the reason it is rejected.
// Pure: the three source formats (PostHog, Mixpanel, Amplitude), the timestamp rules, capture's
// own drop rules applied up front (so capture never drops an event the importer counted as sent),
// and the deterministic uuid that makes re-running a file store nothing twice.
import { v5 as uuidv5 } from 'uuid';
import { exceedsDepth, MAX_JSON_DEPTH, isUuid } from '@sett/schemas';

export const IMPORT_FORMATS = ['posthog', 'mixpanel', 'amplitude'] as const;
export type ImportFormat = (typeof IMPORT_FORMATS)[number];

/** Fixed namespace of the uuids `sett import` derives (UUIDv5): never change it, or re-runs duplicate. */
export const IMPORT_UUID_NAMESPACE = '6f1c3f4e-8a53-4f0b-9d0e-5b7a2c1e9d42';

export type OutgoingEvent = {
  event: string;
  distinct_id: string;
  timestamp: string;
  uuid: string;
  properties: Record<string, unknown>;
  $set_once?: Record<string, unknown>;
};

export type ConvertContext = {
  format: ImportFormat;
  /** The project api key: uuids are derived per project. */
  token: string;
  /** Timestamps after this (ms since epoch) are refused. */
  nowMs: number;
  /** Capture's per-event Kafka limit (record key + value), KAFKA_MESSAGE_MAX_BYTES. */
  maxEventBytes: number;
};

export type Converted =
  | { ok: true; event: OutgoingEvent; json: string; distinctId: string }
  | { ok: false; reason: string };

// ISO 8601 date-time (or date), with "T" or a space, optional fraction and zone.
const ISO_RE =
  /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(\.\d+)?)?)?\s*(Z|[+-]\d{2}(?::?\d{2})?)?$/i;
// Below this an epoch number is seconds, above it milliseconds (1e11 s is the year 5138; 1e11 ms is 1973).
const EPOCH_SECONDS_BELOW = 1e11;
/** Room in capture's Kafka record for what it adds around the event (token twice, ip, now, field names). */
const CAPTURE_RECORD_OVERHEAD = 256;

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

const fail = (reason: string): Converted => ({ ok: false, reason });

/** ISO 8601 (zone-less means UTC), or epoch seconds / milliseconds (number or digit string). */
export function parseTimestamp(
  value: unknown,
  nowMs: number,
): { ok: true; ms: number } | { ok: false; reason: string } {
  let ms: number;
  if (typeof value === 'number' || (typeof value === 'string' && /^\d+(\.\d+)?$/.test(value.trim()))) {
    const n = Number(value);
    if (!Number.isFinite(n) || n <= 0)
      return { ok: false, reason: `timestamp ${JSON.stringify(value)} is not a valid time` };
    ms = n < EPOCH_SECONDS_BELOW ? n * 1000 : n;
  } else if (typeof value === 'string') {
    const m = ISO_RE.exec(value.trim());
    if (!m)
      return {
        ok: false,
        reason: `timestamp ${JSON.stringify(value.slice(0, 64))} is not ISO 8601 or epoch seconds/milliseconds`,
      };
    const [, y, mo, d, h = '00', mi = '00', s = '00', frac = '', zone] = m;
    const fracMs = frac ? Number(frac.slice(0, 4).padEnd(4, '0').slice(1)) : 0;
    const utc = Date.UTC(Number(y), Number(mo) - 1, Number(d), Number(h), Number(mi), Number(s), fracMs);
    const check = new Date(utc);
    if (
      check.getUTCFullYear() !== Number(y) ||
      check.getUTCMonth() !== Number(mo) - 1 ||
      check.getUTCDate() !== Number(d) ||
      Number(h) > 23 ||
      Number(mi) > 59 ||
      Number(s) > 59
    )
      return { ok: false, reason: `timestamp ${JSON.stringify(value)} is not a valid date` };
    let offsetMin = 0;
    if (zone && zone.toUpperCase() !== 'Z') {
      const digits = zone.replace(':', '');
      offsetMin =
        (zone[0] === '-' ? -1 : 1) * (Number(digits.slice(1, 3)) * 60 + Number(digits.slice(3, 5) || 0));
    }
    ms = utc - offsetMin * 60_000;
  } else if (value === undefined || value === null) {
    return { ok: false, reason: 'timestamp is missing' };
  } else {
    return { ok: false, reason: 'timestamp must be a string or a number' };
  }
  if (ms > nowMs) return { ok: false, reason: `timestamp ${new Date(ms).toISOString()} is in the future` };
  if (ms < 0 || Number.isNaN(ms)) return { ok: false, reason: 'timestamp is before 1970' };
  return { ok: true, ms };
}

function distinctIdOf(raw: unknown): string | null {
  if (typeof raw === 'number') return Number.isFinite(raw) ? String(raw) : null;
  if (typeof raw === 'string' && raw.trim() !== '') return raw;
  return null;
}

type Fields = {
  event: unknown;
  distinctId: unknown;
  timestamp: unknown;
  uuid: unknown;
  properties: Record<string, unknown>;
  set: unknown;
  setOnce: unknown;
  /** The source's own de-duplication id and the fields it is unique within. */
  insertKey: string | null;
};

function posthogFields(o: Record<string, unknown>): Fields | string {
  if (o.properties !== undefined && !isObject(o.properties)) return 'properties must be an object';
  const properties = isObject(o.properties) ? o.properties : {};
  return {
    event: o.event,
    distinctId: o.distinct_id ?? properties.distinct_id ?? o.$distinct_id,
    timestamp: o.timestamp,
    uuid: o.uuid,
    properties,
    set: o.$set,
    setOnce: o.$set_once,
    insertKey: null,
  };
}

function mixpanelFields(o: Record<string, unknown>): Fields | string {
  if (!isObject(o.properties)) return 'properties must be an object (Mixpanel export)';
  const { distinct_id, time, $insert_id, ...rest } = o.properties;
  const insertId = typeof $insert_id === 'string' && $insert_id !== '' ? $insert_id : null;
  return {
    event: o.event,
    distinctId: distinct_id,
    timestamp: time,
    uuid: undefined,
    properties: insertId ? { ...rest, $insert_id: insertId } : rest,
    set: undefined,
    setOnce: undefined,
    // Mixpanel de-duplicates on event, distinct_id, time and $insert_id together.
    insertKey: insertId ? JSON.stringify([o.event, distinct_id, time, insertId]) : null,
  };
}

function amplitudeFields(o: Record<string, unknown>): Fields | string {
  if (o.event_properties !== undefined && o.event_properties !== null && !isObject(o.event_properties))
    return 'event_properties must be an object (Amplitude export)';
  if (o.user_properties !== undefined && o.user_properties !== null && !isObject(o.user_properties))
    return 'user_properties must be an object (Amplitude export)';
  const userId = distinctIdOf(o.user_id);
  const distinctId = userId ?? o.device_id;
  const rawInsert = o.insert_id ?? o.$insert_id;
  const insertId = typeof rawInsert === 'string' && rawInsert !== '' ? rawInsert : null;
  const properties: Record<string, unknown> = { ...(isObject(o.event_properties) ? o.event_properties : {}) };
  if (typeof o.device_id === 'string' && o.device_id !== '') properties.$device_id = o.device_id;
  if (insertId) properties.$insert_id = insertId;
  for (const [from, to] of [
    ['platform', '$platform'],
    ['os_name', '$os'],
    ['os_version', '$os_version'],
    ['country', '$geoip_country_name'],
    ['city', '$geoip_city_name'],
    ['ip_address', '$ip'],
    ['session_id', '$amplitude_session_id'],
  ] as const) {
    if (o[from] !== undefined && o[from] !== null && o[from] !== '') properties[to] = o[from];
  }
  return {
    event: o.event_type,
    distinctId,
    timestamp: o.event_time ?? o.time ?? o.client_event_time,
    uuid: undefined,
    properties,
    set:
      isObject(o.user_properties) && Object.keys(o.user_properties).length > 0
        ? o.user_properties
        : undefined,
    setOnce: undefined,
    // Amplitude de-duplicates on insert_id per user/device.
    insertKey: insertId ? JSON.stringify([distinctId, insertId]) : null,
  };
}

const FIELDS: Record<ImportFormat, (o: Record<string, unknown>) => Fields | string> = {
  posthog: posthogFields,
  mixpanel: mixpanelFields,
  amplitude: amplitudeFields,
};

/**
 * Validates and converts one parsed record. `source` is the record's own text: a line without
 * a uuid or an insert id gets UUIDv5(project key + that text), so the same line always gets the
 * same uuid and ingestion (idempotent on team and uuid) stores it once however often it is sent.
 */
export function convertRecord(value: unknown, source: string, ctx: ConvertContext): Converted {
  if (!isObject(value))
    return fail(
      `not a JSON object (got ${Array.isArray(value) ? 'an array' : typeof value === 'object' ? 'null' : typeof value})`,
    );
  // Iterative and first: everything below copies or serialises the value.
  if (exceedsDepth(value, MAX_JSON_DEPTH)) return fail(`nests deeper than ${MAX_JSON_DEPTH} levels`);
  const f = FIELDS[ctx.format](value);
  if (typeof f === 'string') return fail(f);
  if (typeof f.event !== 'string' || f.event.trim() === '') return fail('event name is missing or empty');
  const distinctId = distinctIdOf(f.distinctId);
  if (distinctId === null) return fail('distinct_id is missing or empty');
  const ts = parseTimestamp(f.timestamp, ctx.nowMs);
  if (!ts.ok) return fail(ts.reason);
  if (f.set !== undefined && !isObject(f.set)) return fail('$set must be an object');
  if (f.setOnce !== undefined && !isObject(f.setOnce)) return fail('$set_once must be an object');

  let uuid: string;
  if (f.uuid !== undefined && f.uuid !== null) {
    if (typeof f.uuid !== 'string' || !isUuid(f.uuid)) return fail('uuid is not a UUID');
    uuid = f.uuid.toLowerCase();
  } else if (f.insertKey !== null) {
    uuid = uuidv5(`${ctx.token}\n${ctx.format}:insert\n${f.insertKey}`, IMPORT_UUID_NAMESPACE);
  } else {
    uuid = uuidv5(`${ctx.token}\n${ctx.format}:line\n${source}`, IMPORT_UUID_NAMESPACE);
  }

  let properties = f.properties;
  if (f.set !== undefined) {
    const own = isObject(properties.$set) ? properties.$set : {};
    properties = { ...properties, $set: { ...f.set, ...own } };
  }
  const event: OutgoingEvent = {
    event: f.event,
    distinct_id: distinctId,
    timestamp: new Date(ts.ms).toISOString(),
    uuid,
    properties,
  };
  if (f.setOnce !== undefined) event.$set_once = f.setOnce as Record<string, unknown>;
  const json = JSON.stringify(event);
  // An upper bound of the Kafka record capture will build (see capture-routes.ts): an event
  // passing here is never dropped as too large by capture.
  const recordBytes =
    Buffer.byteLength(json) +
    2 * Buffer.byteLength(ctx.token) +
    Buffer.byteLength(distinctId) +
    CAPTURE_RECORD_OVERHEAD;
  if (recordBytes > ctx.maxEventBytes)
    return fail(
      `event is too large: about ${recordBytes} bytes, the per-event limit is ${ctx.maxEventBytes}`,
    );
  return { ok: true, event, json, distinctId };
}
