// The routes of group types and groups (PostHog's groups_types and groups endpoints).
import { pageRequestInfo, pageUrl } from '../pagination/pagination';
import {
  arrayOf,
  dateTime,
  int,
  jsonObject,
  limitParam,
  projectParams,
  searchParam,
  shape,
  str,
  strOrNull,
} from '../api-schemas';
import { resolveProject, resolveReadableProjectId } from '../projects/project-access';
import { r, personal, PROJECT } from '../route-kit';
import { decodeGroupCursor, encodeGroupCursor } from './group-store';

const groupTypeSchema = shape({
  group_type: str,
  group_type_index: int,
  name_singular: strOrNull,
  name_plural: strOrNull,
  detail_dashboard: { type: 'null' },
  default_columns: { type: 'null' },
});

const groupSchema = shape({
  group_type_index: int,
  group_key: str,
  group_properties: jsonObject,
  created_at: dateTime,
});

const groupTypeIndex = {
  type: 'integer',
  minimum: 0,
  maximum: 4,
  description: 'the group type (groups_types)',
} as const;
const displayName = { type: ['string', 'null'], maxLength: 400 } as const;

const MAX_PAGE = 100;

export const groupRoutes = [
  r({
    method: 'GET',
    url: `${PROJECT}/groups_types/`,
    summary: "The project's group types, by index",
    compat: { posthog: 'same' },
    tag: 'groups',
    auth: personal('group:read'),
    schema: { params: projectParams, response: { 200: arrayOf(groupTypeSchema) } },
    handler: async ({ params, auth }, d) =>
      d.groups.listTypes(await resolveReadableProjectId(d.prisma, auth, params.project_id)),
  }),
  r({
    method: 'PATCH',
    url: `${PROJECT}/groups_types/update_metadata/`,
    summary: 'Rename group types (name_singular, name_plural by group_type_index); answers the list',
    description: 'All rows or none: an index the project does not have is a 400 naming it.',
    compat: { posthog: 'same' },
    tag: 'groups',
    auth: personal('group:write'),
    schema: {
      params: projectParams,
      body: {
        type: 'array',
        maxItems: 5,
        items: {
          type: 'object',
          required: ['group_type_index'],
          additionalProperties: false,
          properties: {
            group_type_index: groupTypeIndex,
            name_singular: displayName,
            name_plural: displayName,
            // Read-only in PostHog's serializer: sent back by clients that PATCH the list they read.
            group_type: { type: 'string', maxLength: 400 },
            detail_dashboard: {},
            default_columns: {},
          },
        },
      },
      response: { 200: arrayOf(groupTypeSchema) },
    },
    handler: async ({ params, body, auth }, d) => {
      const team = await resolveProject(d.prisma, auth, params.project_id);
      return d.groups.updateTypes(
        team.id,
        body as { group_type_index: number; name_singular?: string | null; name_plural?: string | null }[],
      );
    },
  }),
  r({
    method: 'GET',
    url: `${PROJECT}/groups/`,
    summary: "A group type's groups, newest first (cursor pagination: follow next)",
    description:
      'search matches text in the group properties or the exact key (case-insensitive), as PostHog searches. ' +
      `Pages of ${MAX_PAGE}, as PostHog's.`,
    compat: { posthog: 'same' },
    tag: 'groups',
    auth: personal('group:read'),
    schema: {
      params: projectParams,
      querystring: {
        type: 'object',
        required: ['group_type_index'],
        properties: {
          group_type_index: groupTypeIndex,
          search: searchParam,
          cursor: { type: 'string', maxLength: 400, description: 'from next' },
          limit: limitParam,
        },
      },
      response: {
        200: shape({ next: strOrNull, previous: { type: 'null' }, results: arrayOf(groupSchema) }),
      },
    },
    handler: async ({ params, query, auth, request }, d) => {
      const teamId = await resolveReadableProjectId(d.prisma, auth, params.project_id);
      const limit = Math.min(query.limit ?? MAX_PAGE, MAX_PAGE);
      const page = await d.groups.list(
        teamId,
        query.group_type_index,
        query.search,
        decodeGroupCursor(query.cursor),
        limit,
      );
      const info = pageRequestInfo(request, d.publicUrl);
      return {
        next: page.next ? pageUrl(info, { cursor: encodeGroupCursor(page.next) }) : null,
        previous: null,
        results: page.results,
      };
    },
  }),
  r({
    method: 'GET',
    url: `${PROJECT}/groups/find/`,
    summary: 'One group by type and key',
    compat: { posthog: 'same' },
    tag: 'groups',
    auth: personal('group:read'),
    schema: {
      params: projectParams,
      querystring: {
        type: 'object',
        required: ['group_type_index', 'group_key'],
        properties: { group_type_index: groupTypeIndex, group_key: { type: 'string', maxLength: 1000 } },
      },
      response: { 200: groupSchema },
    },
    handler: async ({ params, query, auth }, d) =>
      d.groups.find(
        await resolveReadableProjectId(d.prisma, auth, params.project_id),
        query.group_type_index,
        query.group_key,
      ),
  }),
  r({
    method: 'GET',
    url: `${PROJECT}/groups/property_definitions/`,
    summary: "Each group type's property names with how many groups hold them",
    description: 'Keyed by group type index as a string: {"0": [{"name", "count"}]}, most held first.',
    compat: { posthog: 'same' },
    tag: 'groups',
    auth: personal('group:read'),
    schema: {
      params: projectParams,
      response: {
        200: {
          type: 'object',
          additionalProperties: arrayOf(shape({ name: str, count: int })),
        },
      },
    },
    handler: async ({ params, auth }, d) =>
      d.groups.propertyDefinitions(await resolveReadableProjectId(d.prisma, auth, params.project_id)),
  }),
];
