// Schemas of the events list: its filters (PostHog's event, distinct_id, person_id, before,
// after, properties) and its cursor-paginated answer.
import type { FromSchema } from '@sett/schemas';
import { bool, dateTime, jsonObject, limitParam, nullable, shape, str, arrayOf, uuid } from '../api-schemas';
import { propertiesParam } from '../persons/person-schemas';

const dateParam = {
  type: 'string',
  maxLength: 400,
  description: 'an ISO 8601 date-time (years 0001-9999, UTC)',
} as const;

export const eventListQuery = {
  type: 'object',
  properties: {
    limit: limitParam,
    cursor: { type: 'string', maxLength: 1000, description: 'opaque: taken from next' },
    offset: { type: 'string', description: 'not taken: the events list pages by cursor (follow next)' },
    event: { type: 'string', maxLength: 400, description: 'the event name' },
    distinct_id: { type: 'string', maxLength: 400 },
    person_id: {
      type: 'string',
      maxLength: 400,
      description: "the person's uuid: events of all its distinct ids",
    },
    after: { ...dateParam, description: `events after this time: ${dateParam.description}` },
    before: { ...dateParam, description: `events before this time: ${dateParam.description}` },
    properties: {
      ...propertiesParam,
      description: `${propertiesParam.description} type "event" (the default) or "person".`,
    },
  },
} as const;

export type EventListQuery = FromSchema<typeof eventListQuery>;

const personOfEvent = shape({
  id: uuid,
  uuid,
  distinct_ids: arrayOf(str),
  properties: jsonObject,
  is_identified: bool,
});

export const eventSchema = shape({
  id: uuid,
  uuid,
  event: str,
  distinct_id: str,
  properties: jsonObject,
  timestamp: dateTime,
  person: nullable(personOfEvent),
});

export const eventPageSchema = shape({
  next: { type: ['string', 'null'], description: 'the next page (newest first), or null' },
  previous: { type: 'null' },
  results: arrayOf(eventSchema),
});
