// The routes of annotations (/api/projects/:id/annotations/).
import {
  creatorSchema,
  dateTime,
  int,
  limitParam,
  offsetParam,
  paginated,
  projectItemParams,
  projectParams,
  searchParam,
  shape,
  str,
  strOrNull,
} from '../api-schemas';
import { parsePage } from '../pagination/pagination';
import { resolveProject } from '../projects/project-access';
import { r, personal, listAnswer, itemId, PROJECT } from '../route-kit';
import { MAX_INT4 } from '../validate';
import { ANNOTATION_SCOPES, type AnnotationWrite } from './annotation-service';

const id = { type: ['integer', 'null'], minimum: 1, maximum: MAX_INT4 } as const;

const annotationWriteSchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    content: { type: ['string', 'null'], maxLength: 8192 },
    date_marker: { type: ['string', 'null'], format: 'date-time' },
    scope: {
      type: 'string',
      enum: [...ANNOTATION_SCOPES],
      description:
        'project (default), organization (every project of it), dashboard_item (one insight), dashboard',
    },
    creation_type: { type: 'string', enum: ['USR', 'GIT'] },
    dashboard_item: { ...id, description: 'the insight of a dashboard_item annotation' },
    dashboard_id: { ...id, description: 'the dashboard of a dashboard annotation' },
    deleted: { type: 'boolean', description: 'true deletes the annotation (soft)' },
  },
} as const;

const annotationSchema = shape({
  id: int,
  content: str,
  date_marker: { type: ['string', 'null'] },
  creation_type: str,
  dashboard_item: { type: ['integer', 'null'] },
  dashboard_id: { type: ['integer', 'null'] },
  dashboard_name: strOrNull,
  insight_short_id: strOrNull,
  insight_name: strOrNull,
  insight_derived_name: strOrNull,
  created_by: creatorSchema,
  created_at: dateTime,
  updated_at: dateTime,
  deleted: { type: 'boolean' },
  scope: str,
});

export const annotationRoutes = [
  r({
    method: 'GET',
    url: `${PROJECT}/annotations/`,
    summary: "List the project's annotations and its organization's, latest date first",
    compat: { posthog: 'same' },
    tag: 'annotations',
    auth: personal('annotation:read'),
    schema: {
      params: projectParams,
      querystring: {
        type: 'object',
        properties: {
          limit: limitParam,
          offset: offsetParam,
          search: { ...searchParam, description: 'case-insensitive text the content contains' },
          scope: { type: 'string', enum: [...ANNOTATION_SCOPES] },
        },
      },
      response: { 200: paginated(annotationSchema) },
    },
    handler: async ({ params, query, auth, request }, d) => {
      const team = await resolveProject(d.prisma, auth, params.project_id);
      const page = parsePage(query);
      return listAnswer(
        request,
        d,
        page,
        await d.annotations.list(
          team.id,
          team.organizationId,
          { search: query.search, scope: query.scope },
          page,
        ),
      );
    },
  }),
  r({
    method: 'POST',
    url: `${PROJECT}/annotations/`,
    summary: 'Create an annotation',
    compat: { posthog: 'same' },
    tag: 'annotations',
    status: 201,
    auth: personal('annotation:write'),
    schema: { params: projectParams, body: annotationWriteSchema, response: { 201: annotationSchema } },
    handler: async ({ params, body, auth }, d) => {
      const team = await resolveProject(d.prisma, auth, params.project_id);
      return d.annotations.create(team.id, team.organizationId, auth.userId, body as AnnotationWrite);
    },
  }),
  r({
    method: 'GET',
    url: `${PROJECT}/annotations/:id/`,
    summary: 'Retrieve an annotation',
    compat: { posthog: 'same' },
    tag: 'annotations',
    auth: personal('annotation:read'),
    schema: { params: projectItemParams, response: { 200: annotationSchema } },
    handler: async ({ params, auth }, d) => {
      const team = await resolveProject(d.prisma, auth, params.project_id);
      return d.annotations.retrieve(team.id, team.organizationId, itemId(params.id));
    },
  }),
  r({
    method: 'PATCH',
    url: `${PROJECT}/annotations/:id/`,
    summary: 'Update an annotation, or deleted: true (only from the project that made it)',
    compat: { posthog: 'same' },
    tag: 'annotations',
    auth: personal('annotation:write'),
    schema: { params: projectItemParams, body: annotationWriteSchema, response: { 200: annotationSchema } },
    handler: async ({ params, body, auth }, d) => {
      const team = await resolveProject(d.prisma, auth, params.project_id);
      return d.annotations.update(team.id, team.organizationId, itemId(params.id), body as AnnotationWrite);
    },
  }),
];
