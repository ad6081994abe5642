// Request schema of POST /api/projects/:project_id/persons/bulk_delete/ (PostHog's: either
// `ids` (person uuids) or `distinct_ids`, at most 1000, and `delete_events`). Compiled once.
import { compile, type FromSchema } from '@sett/schemas';
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

export const validatePersonBulkDelete = compile<PersonBulkDelete>(personBulkDeleteSchema);
