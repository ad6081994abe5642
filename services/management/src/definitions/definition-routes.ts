// The routes of event and property definitions: which events and properties a project has
// seen (ingestion records them), so a client or a person can learn what to ask about.
import { paginated, projectParams, queryBoolean } from '../api-schemas';
import { resolveProject, resolveReadableProjectId } from '../projects/project-access';
import { parsePage } from '../pagination/pagination';
import { r, personal, listAnswer, PROJECT } from '../route-kit';
import {
  definitionParams,
  eventDefinitionListQuery,
  eventDefinitionSchema,
  propertyDefinitionListQuery,
  propertyDefinitionSchema,
} from './definition-schemas';
import type { PropertyKind } from './definition-store';

export const definitionRoutes = [
  r({
    method: 'GET',
    url: `${PROJECT}/event_definitions/`,
    summary: 'List the event names the project has seen',
    description:
      'Default order: last seen day, newest first, then name. volume_30_day is refreshed hourly by a ' +
      'background job (null until it has run). Unknown ordering keys are ignored, as PostHog ignores them.',
    compat: {
      posthog: 'differs',
      note: 'no verified, hidden or tags filters and fields (no taxonomy editing)',
    },
    tag: 'definitions',
    auth: personal('event_definition:read'),
    schema: {
      params: projectParams,
      querystring: eventDefinitionListQuery,
      response: { 200: paginated(eventDefinitionSchema) },
    },
    handler: async ({ params, query, auth, request }, d) => {
      const teamId = await resolveReadableProjectId(d.prisma, auth, params.project_id);
      const page = parsePage(query);
      const list = await d.definitions.listEvents(
        teamId,
        {
          search: query.search,
          ordering: query.ordering,
          event_type: query.event_type,
          names: query.names,
          exclude_stale: queryBoolean(query.exclude_stale),
        },
        page,
      );
      return listAnswer(request, d, page, list);
    },
  }),
  r({
    method: 'GET',
    url: `${PROJECT}/event_definitions/:id/`,
    summary: 'Retrieve an event definition',
    compat: { posthog: 'same' },
    tag: 'definitions',
    auth: personal('event_definition:read'),
    schema: { params: definitionParams, response: { 200: eventDefinitionSchema } },
    handler: async ({ params, auth }, d) =>
      d.definitions.retrieveEvent(
        await resolveReadableProjectId(d.prisma, auth, params.project_id),
        params.id,
      ),
  }),
  r({
    method: 'DELETE',
    url: `${PROJECT}/event_definitions/:id/`,
    summary: 'Delete an event definition (its events stay)',
    compat: { posthog: 'same' },
    tag: 'definitions',
    status: 204,
    auth: personal('event_definition:write'),
    schema: { params: definitionParams },
    handler: async ({ params, auth }, d) => {
      const team = await resolveProject(d.prisma, auth, params.project_id);
      await d.definitions.removeEvent(team.id, params.id);
    },
  }),
  r({
    method: 'GET',
    url: `${PROJECT}/property_definitions/`,
    summary: 'List the property names the project has seen on events, persons or groups',
    description:
      'type=event (default), person, or group with group_type_index. property_type is inferred from the ' +
      'first value seen (Numeric, String, Boolean, DateTime; null for objects and lists). With event_names, ' +
      'is_seen_on_filtered_events says whether each property was seen on one of them, and those come first.',
    compat: { posthog: 'differs', note: 'no metadata (description, tags, verified) editing' },
    tag: 'definitions',
    auth: personal('property_definition:read'),
    schema: {
      params: projectParams,
      querystring: propertyDefinitionListQuery,
      response: { 200: paginated(propertyDefinitionSchema) },
    },
    handler: async ({ params, query, auth, request }, d) => {
      const teamId = await resolveReadableProjectId(d.prisma, auth, params.project_id);
      const page = parsePage(query);
      const list = await d.definitions.listProperties(
        teamId,
        {
          search: query.search,
          type: query.type as PropertyKind | undefined,
          group_type_index: query.group_type_index,
          event_names: query.event_names,
          filter_by_event_names: queryBoolean(query.filter_by_event_names),
          is_numerical: queryBoolean(query.is_numerical),
          is_feature_flag: queryBoolean(query.is_feature_flag),
          properties: query.properties,
          excluded_properties: query.excluded_properties,
          exclude_core_properties: queryBoolean(query.exclude_core_properties),
        },
        page,
      );
      return listAnswer(request, d, page, list);
    },
  }),
  r({
    method: 'GET',
    url: `${PROJECT}/property_definitions/:id/`,
    summary: 'Retrieve a property definition',
    compat: { posthog: 'same' },
    tag: 'definitions',
    auth: personal('property_definition:read'),
    schema: { params: definitionParams, response: { 200: propertyDefinitionSchema } },
    handler: async ({ params, auth }, d) =>
      d.definitions.retrieveProperty(
        await resolveReadableProjectId(d.prisma, auth, params.project_id),
        params.id,
      ),
  }),
  r({
    method: 'DELETE',
    url: `${PROJECT}/property_definitions/:id/`,
    summary: 'Delete a property definition',
    compat: { posthog: 'same' },
    tag: 'definitions',
    status: 204,
    auth: personal('property_definition:write'),
    schema: { params: definitionParams },
    handler: async ({ params, auth }, d) => {
      const team = await resolveProject(d.prisma, auth, params.project_id);
      await d.definitions.removeProperty(team.id, params.id);
    },
  }),
];
