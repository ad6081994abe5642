// The schema pieces every part of management's route table shares: path parameters, the
// limit/offset query of list endpoints, the list envelope, and small builders for the answers'
// shapes. Answers are described exactly (every field required, no others allowed): the tests run
// the app with `checkResponses`, so a field added to a view without its schema fails them.
import { UUID_PATTERN } from '@sett/schemas';
import { DEFAULT_LIMIT, MAX_LIMIT } from './pagination/pagination';
import { MAX_INT4 } from './validate';

type Schema = Record<string, unknown>;

export const str = { type: 'string' } as const;
export const strOrNull = { type: ['string', 'null'] } as const;
export const int = { type: 'integer' } as const;
export const bool = { type: 'boolean' } as const;
export const dateTime = { type: 'string', format: 'date-time' } as const;
export const dateTimeOrNull = { type: ['string', 'null'], format: 'date-time' } as const;
export const uuid = { type: 'string', format: 'uuid' } as const;
/** Any JSON value (free-form fields stored as given). */
export const anyJson = {} as const;
export const jsonObject = { type: 'object' } as const;

/** An answer object: exactly these fields, all present (`optional` names the ones that may be absent). */
export function shape(
  properties: Record<string, unknown>,
  opts: { optional?: string[]; description?: string } = {},
) {
  const optional = new Set(opts.optional ?? []);
  return {
    type: 'object',
    ...(opts.description ? { description: opts.description } : {}),
    required: Object.keys(properties).filter((k) => !optional.has(k)),
    properties,
    additionalProperties: false,
  } as Schema;
}

export function nullable(schema: Schema): Schema {
  return { anyOf: [schema, { type: 'null' }] };
}

export function arrayOf(items: unknown): Schema {
  return { type: 'array', items };
}

/** PostHog's list envelope {count, next, previous, results}. */
export function paginated(item: unknown): Schema {
  return shape({
    count: int,
    next: { type: ['string', 'null'], description: 'the next page, or null on the last one' },
    previous: { type: ['string', 'null'] },
    results: arrayOf(item),
  });
}

// --- path parameters (a value that cannot name a row is a 404, as PostHog answers) ---

/** A project id, or `@current` (the caller's current project). */
export const projectIdParam = {
  type: 'string',
  pattern: '^([1-9][0-9]{0,9}|@current)$',
  description: 'a project id, or @current',
} as const;

/** An int4 id in a path. */
export const intIdParam = {
  type: 'string',
  pattern: '^[1-9][0-9]{0,9}$',
  description: `an id between 1 and ${MAX_INT4}`,
} as const;

export const uuidParam = { type: 'string', pattern: UUID_PATTERN, description: 'a uuid' } as const;

export const projectParams = {
  type: 'object',
  required: ['project_id'],
  properties: { project_id: projectIdParam },
} as const;

export const projectItemParams = {
  type: 'object',
  required: ['project_id', 'id'],
  properties: { project_id: projectIdParam, id: intIdParam },
} as const;

// --- query strings ---

export const limitParam = {
  type: 'integer',
  minimum: 1,
  description: `page size (default ${DEFAULT_LIMIT}; larger values are clamped to ${MAX_LIMIT})`,
} as const;

export const offsetParam = {
  type: 'integer',
  minimum: 0,
  maximum: 999_999_999,
  description: 'how many results to skip',
} as const;

/** The query of a list endpoint with nothing but limit/offset. */
export const listQuery = {
  type: 'object',
  properties: { limit: limitParam, offset: offsetParam },
} as const;

/** `?search=` of the lists that have one (PostHog's name search, case-insensitive). */
export const searchParam = {
  type: 'string',
  maxLength: 400,
  description: 'case-insensitive text the name contains',
} as const;

/** A list with limit/offset and a name search. */
export const searchListQuery = {
  type: 'object',
  properties: { limit: limitParam, offset: offsetParam, search: searchParam },
} as const;

/** `true`/`false` in a query string (also 1/0 and Python's True/False, as DRF takes them;
 * empty means not given). */
export const booleanQuery = {
  type: 'string',
  enum: ['true', 'false', '1', '0', 'True', 'False', ''],
} as const;

export function queryBoolean(value: string | undefined): boolean | undefined {
  if (value === undefined || value === '') return undefined;
  return value === 'true' || value === '1' || value === 'True';
}

/** The creator of a flag or cohort, as PostHog nests it. */
export const creatorSchema = nullable(
  shape({ id: int, uuid, distinct_id: str, first_name: str, last_name: str, email: str }),
);
