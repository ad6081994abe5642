// Every route capture serves, one declaration each. Dispatch, 405s, CORS, metrics labels,
// OpenAPI and the proxies' route lists are all derived from this table (@sett/http's route
// mechanism; docs/architecture.md, "HTTP routes").
import { route, type RouteTable } from '@sett/http';
import { batchSchema, eventSchema } from '@sett/schemas';
import type { CaptureHandler } from './capture/capture-handler';

export interface CaptureRouteDeps {
  capture: CaptureHandler;
}

const r = route<CaptureRouteDeps>();

// SDKs add cache busters and version markers of their own (`_`, `ver`, `ip`, `retry_count`,
// `beacon`…), and old releases send others: capture reads `compression` and `_` and, as
// PostHog's capture does, ignores the rest rather than lose an SDK's events over them.
const captureQuery = {
  type: 'object',
  properties: {
    compression: { type: 'string', description: 'gzip-js, lz64 or base64: how the body is encoded' },
    _: { type: 'string', description: 'client time in ms, used as sent_at when the body has none' },
    ver: { type: 'string', description: 'the SDK version (ignored)' },
  },
  additionalProperties: true,
} as const;

const captureBody = {
  description:
    'One event, an array of events, or {api_key, batch: [...]}; JSON, form-encoded `data=`, ' +
    'gzip (Content-Encoding or ?compression=gzip-js), lz64 or base64.',
  anyOf: [eventSchema, { type: 'array', items: eventSchema }, batchSchema],
} as const;

const accepted = {
  type: 'object',
  required: ['status'],
  properties: { status: { const: 1 } },
  additionalProperties: false,
} as const;

function capturePath(url: string, summary: string, engage = false) {
  return r({
    method: 'POST',
    url,
    summary,
    tag: 'capture',
    auth: { kind: 'project_token', in: 'body' },
    // The handler reads and decodes the body itself (gzip, lz64, base64, form, size limits).
    body: 'raw',
    schema: { querystring: captureQuery, rawBody: captureBody, response: { 200: accepted } },
    compat: { posthog: 'same' },
    handler: ({ request, reply }, deps) => deps.capture(request.raw, reply.raw, { engage }),
  });
}

export const captureRoutes: RouteTable<CaptureRouteDeps> = {
  service: 'capture',
  routes: [
    capturePath('/i/v0/e/', 'Capture events (the path of current SDKs)'),
    capturePath('/e/', 'Capture events'),
    capturePath('/capture/', 'Capture events'),
    capturePath('/track/', 'Capture events'),
    capturePath('/batch/', 'Capture a batch of events (historical_migration: true for backfills)'),
    capturePath('/engage/', 'Legacy person update ($set / $set_once) as an $identify event', true),
  ],
};
