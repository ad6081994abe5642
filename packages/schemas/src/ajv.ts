// The one Ajv instance of the process. Schemas are compiled once at start-up (compile() caches
// by schema object), and validation errors are turned into one readable sentence plus the
// offending attribute, which the HTTP layer returns as PostHog-style `detail` / `attr`.
import Ajv, { type ErrorObject, type ValidateFunction } from 'ajv';
import addFormats from 'ajv-formats';
import { UUID_PATTERN } from './uuid';

export const ajv = new Ajv({ allErrors: false, coerceTypes: false, useDefaults: false, strict: false });
addFormats(ajv);

export type { ValidateFunction, ErrorObject };

export interface ValidationProblem {
  detail: string;
  attr: string | null;
}

export function describeAjvError(errors: ErrorObject[] | null | undefined): ValidationProblem {
  const e = errors?.[0];
  if (!e) return { detail: 'Invalid request body.', attr: null };
  const path = e.instancePath.replace(/^\//, '').replace(/\//g, '.');
  if (e.keyword === 'required') {
    const missing = (e.params as { missingProperty: string }).missingProperty;
    const attr = path ? `${path}.${missing}` : missing;
    return { detail: `${attr} is required.`, attr };
  }
  if (e.keyword === 'additionalProperties') {
    const extra = (e.params as { additionalProperty: string }).additionalProperty;
    const attr = path ? `${path}.${extra}` : extra;
    return { detail: `${attr} is not an accepted field.`, attr };
  }
  // A field declared `notServed()`: known, and refused, because ignoring it would change what
  // is stored or answered.
  if (e.keyword === 'not' && path)
    return { detail: `${path} is not served by Sett: leave it out.`, attr: path };
  // UUID_PATTERN fails before a `format: uuid` beside it runs: said as the format's message.
  if (e.keyword === 'pattern' && (e.params as { pattern?: string }).pattern === UUID_PATTERN)
    return { detail: `${path || 'value'} must match format "uuid".`, attr: path || null };
  if (e.keyword === 'enum') {
    const allowed = (e.params as { allowedValues: unknown[] }).allowedValues
      .map((v) => JSON.stringify(v))
      .join(', ');
    return { detail: `${path || 'value'} must be one of ${allowed}.`, attr: path || null };
  }
  return { detail: `${path || 'body'} ${e.message ?? 'is invalid'}.`, attr: path || null };
}

/**
 * The schema of a field Sett knows (PostHog's API takes it) but does not serve: any value is
 * refused with a 400 naming it, where silently dropping it would change the result.
 */
export function notServed(why: string) {
  return { not: {}, description: `Not served by Sett: ${why}` } as const;
}

/** Compile a schema with the shared instance; call at module load, not per request. */
export function compile<T>(schema: object): ValidateFunction<T> {
  return ajv.compile<T>(schema);
}
