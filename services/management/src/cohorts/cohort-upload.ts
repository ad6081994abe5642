// A cohort create or PATCH sent as multipart/form-data with a `csv` file, as PostHog's UI
// uploads a static cohort (the route's body mode `upload`): the form fields are turned into the
// JSON body they stand for (is_static/deleted "true"/"false", filters a JSON string), checked by
// the same schema and rules as JSON bodies, and the CSV becomes the distinct ids to add.
import type { FastifyRequest } from 'fastify';
import { ValidationError } from '@sett/http';
import { exceedsDepth, MAX_JSON_DEPTH, unstorableReason, type ValidateFunction } from '@sett/schemas';
import { validateBody } from '../validate';
import { distinctIdsFromCsv } from './cohort-csv';
import { readMultipart } from './cohort-multipart';

export async function readCohortUpload<T>(
  request: FastifyRequest,
  validate: ValidateFunction<T>,
): Promise<{ body: T; members?: string[] }> {
  const form = await readMultipart(request.raw);
  const body: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(form.fields)) {
    const problem = unstorableReason(value);
    if (problem)
      throw new ValidationError(
        `${name} holds a character that cannot be stored.`,
        name,
        problem === 'nul' ? 'null_characters_not_allowed' : 'surrogate_characters_not_allowed',
      );
    if (name === 'is_static' || name === 'deleted') {
      if (value !== 'true' && value !== 'false')
        throw new ValidationError(`${name} must be true or false.`, name);
      body[name] = value === 'true';
    } else if (name === 'filters') {
      try {
        body.filters = JSON.parse(value);
      } catch {
        throw new ValidationError('filters must be a JSON object.', 'filters');
      }
      if (exceedsDepth(body.filters, MAX_JSON_DEPTH))
        throw new ValidationError(
          `filters nests deeper than ${MAX_JSON_DEPTH} levels.`,
          'filters',
          'too_deep',
        );
    } else body[name] = value;
  }
  return {
    body: validateBody(validate, body),
    members: form.csv ? distinctIdsFromCsv(form.csv) : undefined,
  };
}
