// JSON Schemas of the public request bodies (docs/interface.md, "Capturing events" and "Flag
// evaluation"). They check types only: an event with no name or no distinct_id is still
// well-formed here, because such events are dropped with a 200, not refused (docs/interface.md,
// "Events that are not ingested").
import type { FromSchema } from 'json-schema-to-ts';
import { compile } from './ajv';

const distinctId = { type: ['string', 'number'] } as const;

export const eventSchema = {
  type: 'object',
  properties: {
    api_key: { type: 'string' },
    token: { type: 'string' },
    event: { type: ['string', 'null'] },
    distinct_id: { type: ['string', 'number', 'null'] },
    properties: { type: 'object' },
    timestamp: { type: ['string', 'null'] },
    sent_at: { type: ['string', 'null'] },
    uuid: { type: ['string', 'null'] },
    offset: { type: ['number', 'null'] },
    $set: { type: 'object' },
    $set_once: { type: 'object' },
  },
  additionalProperties: true,
} as const;
export type EventBody = FromSchema<typeof eventSchema>;

export const batchSchema = {
  type: 'object',
  properties: {
    api_key: { type: 'string' },
    token: { type: 'string' },
    historical_migration: { type: 'boolean' },
    sent_at: { type: ['string', 'null'] },
    batch: { type: 'array', items: eventSchema },
  },
  required: ['batch'],
  additionalProperties: true,
} as const;
export type BatchBody = FromSchema<typeof batchSchema>;

export const decideSchema = {
  type: 'object',
  properties: {
    api_key: { type: 'string' },
    token: { type: 'string' },
    distinct_id: distinctId,
    $anon_distinct_id: { type: ['string', 'number', 'null'] },
    groups: { type: 'object', additionalProperties: { type: ['string', 'number'] } },
    person_properties: { type: 'object' },
    group_properties: { type: 'object', additionalProperties: { type: 'object' } },
    geoip_disable: { type: 'boolean' },
    disable_flags: { type: 'boolean' },
  },
  required: ['distinct_id'],
  additionalProperties: true,
} as const;
export type DecideBody = FromSchema<typeof decideSchema>;

export const validateEvent = compile<EventBody>(eventSchema);
export const validateBatch = compile<BatchBody>(batchSchema);
export const validateDecide = compile<DecideBody>(decideSchema);

/** The web vitals posthog-js can capture (a project's `autocapture_web_vitals_allowed_metrics`). */
export const WEB_VITALS_METRICS = ['CLS', 'FCP', 'INP', 'LCP'] as const;
