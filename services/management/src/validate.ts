// Runs a compiled schema on a request body and turns the first error into a 400 naming the
// attribute, PostHog style. A missing body on POST/PATCH counts as an empty object.
import { ValidationError } from '@sett/http';
import { describeAjvError, type ValidateFunction } from '@sett/schemas';

export function validateBody<T>(validate: ValidateFunction<T>, body: unknown): T {
  const value = body === undefined ? {} : body;
  if (!validate(value)) {
    // UUID_PATTERN fails before `format` runs: said as the format's message, not the regex.
    const errors = validate.errors?.map((e) =>
      e.keyword === 'pattern' && (e.params as { pattern?: string }).pattern === UUID_PATTERN
        ? { ...e, keyword: 'format', message: 'must match format "uuid"' }
        : e,
    );
    const { detail, attr } = describeAjvError(errors);
    throw new ValidationError(detail, attr, 'invalid_input');
  }
  return value;
}

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * For a body field that names a uuid column, next to `format: 'uuid'`: ajv-formats' uuid also
 * takes a `urn:uuid:` prefix, which Postgres' uuid type refuses (the request then failed in the
 * query, with a 400 that did not name the field).
 */
export const UUID_PATTERN = '^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$';

export function isUuid(value: string): boolean {
  return UUID_RE.test(value);
}

/** The largest id Postgres' int4 (serial) holds: integer ids are 1..MAX_INT4. */
export const MAX_INT4 = 2_147_483_647;

/**
 * A positive int4 id written in decimal, or undefined. In a path the caller answers 404 (such a
 * row cannot exist, as PostHog answers for a malformed id in a URL); in a body, 400.
 */
export function parseIntId(value: string): number | undefined {
  return /^[1-9][0-9]{0,9}$/.test(value) && Number(value) <= MAX_INT4 ? Number(value) : undefined;
}
