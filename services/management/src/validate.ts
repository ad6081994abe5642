// Runs a compiled schema on a request body and turns the first error into a 400 naming the
// attribute, PostHog style. A missing body on POST/PATCH counts as an empty object.
import { ValidationError } from '@sett/http';
import { describeAjvError, type ValidateFunction } from '@sett/schemas';

export { UUID_PATTERN, isUuid } from '@sett/schemas';

export function validateBody<T>(validate: ValidateFunction<T>, body: unknown): T {
  const value = body === undefined ? {} : body;
  if (!validate(value)) {
    const { detail, attr } = describeAjvError(validate.errors);
    throw new ValidationError(detail, attr, 'invalid_input');
  }
  return value;
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
