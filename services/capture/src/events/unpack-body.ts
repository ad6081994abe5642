// The shapes a capture body can take (one event, an array of events, a `{batch: [...]}` body, a
// legacy /engage/ person update), checked for types with the shared schemas, and the project
// token taken from wherever the SDK put it. Pure.
import { AuthenticationError, ValidationError } from '@sett/http';
import { describeAjvError, isWellFormedProjectToken, validateBatch, validateEvent } from '@sett/schemas';

export type RawEvent = Record<string, unknown>;

export type UnpackedBody = {
  /** api_key / token as found, not yet checked. */
  token: unknown;
  historical: boolean;
  /** Body-level sent_at (mobile SDKs), not yet parsed. */
  sentAt: unknown;
  events: RawEvent[];
  /** The body was one event object (not an array or batch): an oversize event is then a 413. */
  single: boolean;
};

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

function invalidTypes(
  errors: Parameters<typeof describeAjvError>[0],
  prefix: string | null,
): ValidationError {
  const problem = describeAjvError(errors);
  if (prefix === null) return new ValidationError(problem.detail, problem.attr, 'invalid_payload');
  const attr = problem.attr ? `${prefix}.${problem.attr}` : prefix;
  return new ValidationError(`${prefix}: ${problem.detail}`, attr, 'invalid_payload');
}

function tokenOf(e: RawEvent | undefined): unknown {
  if (!e) return undefined;
  const props = isObject(e.properties) ? e.properties : undefined;
  return e.api_key ?? e.token ?? props?.token;
}

/** Legacy /engage/ bodies (`{$token, $distinct_id, $set}`) become `$identify` events. */
function fromEngage(body: Record<string, unknown>): RawEvent {
  if (body.event !== undefined || body.$distinct_id === undefined) return body;
  const properties: Record<string, unknown> = {};
  if (isObject(body.$set)) properties.$set = body.$set;
  if (isObject(body.$set_once)) properties.$set_once = body.$set_once;
  return {
    event: '$identify',
    api_key: body.api_key ?? body.$token,
    distinct_id: body.$distinct_id,
    properties,
  };
}

export function unpackBody(value: unknown, opts: { engage?: boolean } = {}): UnpackedBody {
  if (Array.isArray(value)) {
    value.forEach((e, i) => {
      if (!validateEvent(e)) throw invalidTypes(validateEvent.errors, String(i));
    });
    const events = value as RawEvent[];
    return {
      token: events.map(tokenOf).find((t) => t !== undefined),
      historical: false,
      sentAt: undefined,
      events,
      single: false,
    };
  }
  if (!isObject(value))
    throw new ValidationError(
      'Request body must be a JSON object or array of events.',
      null,
      'invalid_payload',
    );
  if ('batch' in value) {
    if (!validateBatch(value)) throw invalidTypes(validateBatch.errors, null);
    const events = value.batch as RawEvent[];
    return {
      token: value.api_key ?? value.token ?? events.map(tokenOf).find((t) => t !== undefined),
      historical: value.historical_migration === true,
      sentAt: value.sent_at,
      events,
      single: false,
    };
  }
  const event = opts.engage ? fromEngage(value) : value;
  if (!validateEvent(event)) throw invalidTypes(validateEvent.errors, null);
  return { token: tokenOf(event), historical: false, sentAt: undefined, events: [event], single: true };
}

const MISSING_KEY = 'API key not provided. You can find your project API key in your project settings.';
const INVALID_KEY = 'Project API key invalid. You can find your project API key in your project settings.';

/** Shape check before any lookup: non-empty, at most 64 printable ASCII characters, not a personal key. */
export function checkTokenShape(token: unknown): string {
  if (token === undefined || token === null) throw new AuthenticationError(MISSING_KEY, 'missing_api_key');
  if (typeof token !== 'string') throw new AuthenticationError(INVALID_KEY, 'invalid_api_key');
  const trimmed = token.trim();
  if (trimmed === '') throw new AuthenticationError(MISSING_KEY, 'missing_api_key');
  if (!isWellFormedProjectToken(trimmed)) throw new AuthenticationError(INVALID_KEY, 'invalid_api_key');
  if (trimmed.startsWith('phx_')) {
    throw new AuthenticationError(
      'A personal API key was sent; capture takes the project API key (phc_...).',
      'invalid_api_key',
    );
  }
  return trimmed;
}

export const INVALID_API_KEY_DETAIL = INVALID_KEY;
