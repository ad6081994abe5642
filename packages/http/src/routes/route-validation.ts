// Request validation for the route tables: one rule for turning a failed schema into a 400.
// Bodies are checked by @sett/schemas' shared Ajv instance (no coercion: JSON has types).
// Query strings and path parameters arrive as strings, so they get a second instance that
// coerces "5" to 5 for `type: integer` (and nothing else: a repeated parameter stays an array
// and fails `type: string`). Unknown query parameters are refused: a querystring schema is
// closed (`additionalProperties: false`) unless it says otherwise.
import Ajv, { type ErrorObject } from 'ajv';
import addFormats from 'ajv-formats';
import { ajv as bodyAjv, describeAjvError } from '@sett/schemas';
import { NotFoundError, ValidationError, type SettError } from '../errors';

const stringPartsAjv = new Ajv({ allErrors: false, coerceTypes: true, useDefaults: true, strict: false });
addFormats(stringPartsAjv);

export type HttpPart = 'body' | 'querystring' | 'params' | 'headers';

/** A querystring schema as the mechanism compiles it: closed unless it opts out. */
export function closeQuerySchema(schema: object | undefined): object {
  const base = (schema ?? { type: 'object', properties: {} }) as Record<string, unknown>;
  return 'additionalProperties' in base ? base : { ...base, additionalProperties: false };
}

export function compileFor(part: HttpPart, schema: object) {
  return part === 'body' ? bodyAjv.compile(schema) : stringPartsAjv.compile(schema);
}

/**
 * The 400 (or 404) for a failed schema. `attr` is one format everywhere: the dotted path into
 * the body (`filters.groups.0.properties`), or the query parameter's name.
 */
export function validationFailure(part: string | undefined, errors: ErrorObject[]): SettError {
  // A path parameter that cannot be an id names no row: PostHog answers 404 for it.
  if (part === 'params') return new NotFoundError();
  if (part === 'querystring') {
    const e = errors[0];
    if (e?.keyword === 'additionalProperties') {
      const name = (e.params as { additionalProperty: string }).additionalProperty;
      return new ValidationError(`Unknown query parameter '${name}'.`, name, 'invalid_input');
    }
    const { detail, attr } = describeAjvError(errors);
    return new ValidationError(detail.replace(/^querystring\b/, 'query'), attr, 'invalid_input');
  }
  const { detail, attr } = describeAjvError(errors);
  return new ValidationError(detail, attr, 'invalid_input');
}
