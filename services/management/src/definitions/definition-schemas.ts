// Query strings of the event and property definition lists (PostHog's filters) and the shapes
// of a definition in answers.
import {
  arrayOf,
  booleanQuery,
  dateTime,
  dateTimeOrNull,
  int,
  limitParam,
  offsetParam,
  searchParam,
  shape,
  str,
  strOrNull,
  uuidParam,
  projectIdParam,
} from '../api-schemas';

export const EVENT_ORDERINGS = [
  'name',
  'last_seen_at',
  'last_seen_at::date',
  'created_at',
  'created_at::date',
  'volume_30_day',
] as const;

export const eventDefinitionListQuery = {
  type: 'object',
  properties: {
    limit: limitParam,
    offset: offsetParam,
    search: {
      ...searchParam,
      description: 'every whitespace-separated term is in the name (case-insensitive)',
    },
    ordering: {
      type: 'string',
      maxLength: 200,
      description: `comma-separated sort keys, - for descending: ${EVENT_ORDERINGS.join(', ')} (default -last_seen_at::date,name)`,
    },
    event_type: {
      type: 'string',
      enum: ['event', 'event_custom', 'event_posthog', 'all', 'action_event'],
      description:
        'event_custom: names without a $ prefix; event_posthog: with one (all and action_event: event)',
    },
    names: { type: 'string', maxLength: 20_000, description: 'comma-separated exact names' },
    exclude_stale: {
      ...booleanQuery,
      description: 'leave out events not seen in 30 days (never-seen ones stay)',
    },
    exclude_hidden: { ...booleanQuery, description: 'accepted; Sett hides no definition' },
  },
} as const;

export const PROPERTY_TYPES = ['Numeric', 'String', 'Boolean', 'DateTime'] as const;

export const propertyDefinitionListQuery = {
  type: 'object',
  properties: {
    limit: limitParam,
    offset: offsetParam,
    search: {
      ...searchParam,
      description: 'every whitespace-separated term is in the name (case-insensitive)',
    },
    type: { type: 'string', enum: ['event', 'person', 'group'], description: 'default event' },
    group_type_index: {
      type: 'integer',
      minimum: 0,
      maximum: 4,
      description: 'the group type, with type=group (required then)',
    },
    event_names: {
      type: 'string',
      maxLength: 20_000,
      description:
        'a JSON list of event names: is_seen_on_filtered_events says whether each property was seen on one',
    },
    filter_by_event_names: {
      ...booleanQuery,
      description: 'with event_names: only the properties seen on them',
    },
    is_numerical: { ...booleanQuery, description: 'true: only numeric properties' },
    is_feature_flag: { ...booleanQuery, description: 'true: only $feature/ properties; false: none of them' },
    properties: { type: 'string', maxLength: 20_000, description: 'comma-separated exact names' },
    excluded_properties: {
      type: 'string',
      maxLength: 20_000,
      description: 'a JSON list of names to leave out',
    },
    exclude_core_properties: { ...booleanQuery, description: 'true: leave out names starting with $' },
    exclude_hidden: { ...booleanQuery, description: 'accepted; Sett hides no definition' },
  },
} as const;

export const definitionParams = {
  type: 'object',
  required: ['project_id', 'id'],
  properties: { project_id: projectIdParam, id: uuidParam },
} as const;

export const eventDefinitionSchema = shape({
  id: str,
  name: str,
  created_at: dateTime,
  last_seen_at: dateTimeOrNull,
  last_updated_at: dateTimeOrNull,
  volume_30_day: { type: ['integer', 'null'], description: 'events of the last 30 days (refreshed hourly)' },
  query_usage_30_day: { type: 'null' },
  tags: arrayOf(str),
  is_action: { type: 'boolean' },
  action_id: { type: 'null' },
  is_calculating: { type: 'boolean' },
  last_calculated_at: { type: 'null' },
  created_by: { type: 'null' },
  post_to_slack: { type: 'boolean' },
});

export const propertyDefinitionSchema = shape({
  id: str,
  name: str,
  type: int,
  group_type_index: { type: ['integer', 'null'] },
  is_numerical: { type: 'boolean' },
  property_type: { ...strOrNull, enum: [...PROPERTY_TYPES, null] },
  tags: arrayOf(str),
  is_seen_on_filtered_events: { type: ['boolean', 'null'] },
});
