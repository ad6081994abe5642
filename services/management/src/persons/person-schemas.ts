// Schemas of the persons endpoints: the list's filters (PostHog's distinct_id, email, search and
// properties), POST .../persons/bulk_delete/ (PostHog's: either `ids` (person uuids) or
// `distinct_ids`, at most 1000, and `delete_events`), and the shapes of the answers.
import { type FromSchema } from '@sett/schemas';
import {
  arrayOf,
  bool,
  booleanQuery,
  dateTime,
  dateTimeOrNull,
  int,
  jsonObject,
  limitParam,
  offsetParam,
  shape,
  str,
  strOrNull,
  uuid,
} from '../api-schemas';
import { UUID_PATTERN } from '../validate';

export const MAX_BULK_DELETE_IDS = 1000;

export const personBulkDeleteSchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    ids: {
      type: 'array',
      minItems: 1,
      maxItems: MAX_BULK_DELETE_IDS,
      items: { type: 'string', format: 'uuid', pattern: UUID_PATTERN },
    },
    distinct_ids: {
      type: 'array',
      minItems: 1,
      maxItems: MAX_BULK_DELETE_IDS,
      items: { type: 'string', minLength: 1, maxLength: 400 },
    },
    delete_events: { type: 'boolean' },
  },
} as const;

export type PersonBulkDelete = FromSchema<typeof personBulkDeleteSchema>;

export const propertiesParam = {
  type: 'string',
  maxLength: 20_000,
  description:
    'PostHog property filters as JSON: a list of {key, value, operator, type} (all must hold), or a group ' +
    '{type: "AND"|"OR", values: [...]}. Operators: exact, is_not, is_set, is_not_set, icontains, not_icontains, ' +
    'regex, not_regex, gt, gte, lt, lte, is_date_before, is_date_after, is_date_exact.',
  examples: ['[{"key":"email","value":"@example.com","operator":"icontains","type":"person"}]'],
} as const;

export const personListQuery = {
  type: 'object',
  properties: {
    limit: limitParam,
    offset: offsetParam,
    distinct_id: { type: 'string', maxLength: 400, description: 'the person with this distinct id' },
    email: { type: 'string', maxLength: 400, description: 'persons whose email property is this (exact)' },
    search: {
      type: 'string',
      maxLength: 400,
      description:
        'persons with this distinct id, or whose email or name contains this text (case-insensitive)',
    },
    properties: { ...propertiesParam, description: `${propertiesParam.description} Person properties only.` },
  },
} as const;

export const deleteEventsQuery = {
  type: 'object',
  properties: {
    delete_events: { ...booleanQuery, description: 'also delete their events (a background job)' },
  },
} as const;

export type PersonListQuery = FromSchema<typeof personListQuery>;

// --- answers ---

export const personSchema = shape({
  id: { ...uuid, description: "the person's uuid (as PostHog's current API)" },
  uuid,
  distinct_ids: arrayOf(str),
  properties: jsonObject,
  is_identified: bool,
  created_at: dateTime,
});

export const personDeletionSchema = shape(
  {
    id: int,
    status: { type: 'string', enum: ['queued', 'running', 'succeeded', 'failed'] },
    phase: { type: 'string', enum: ['events', 'settle', 'done'] },
    delete_events: bool,
    distinct_id_count: int,
    events_deleted: int,
    persons_swept: int,
    attempts: int,
    last_error: strOrNull,
    run_after: dateTime,
    created_at: dateTime,
    started_at: dateTimeOrNull,
    finished_at: dateTimeOrNull,
  },
  { description: 'A person deletion job (docs/data-lifecycle.md)' },
);
