// What management's route blocks share: the typed route builder, the personal-key auth of a
// scope, the list envelope, the path parameters and the project path prefix.
import type { FastifyRequest } from 'fastify';
import { NotFoundError, route } from '@sett/http';
import { projectParams, uuidParam } from './api-schemas';
import type { AuthContext } from './auth/auth-context';
import { envelope, pageRequestInfo, type Page } from './pagination/pagination';
import type { ManagementRouteDeps } from './route-deps';
import { parseIntId } from './validate';

export const r = route<ManagementRouteDeps, AuthContext>();
export const personal = (scope: string) => ({ kind: 'personal_key', scope }) as const;

/** The list envelope of a page, its links built from the request (pagination.ts). */
export function listAnswer<T>(
  request: FastifyRequest,
  deps: ManagementRouteDeps,
  page: Page,
  list: { count: number; results: T[] },
) {
  return envelope(pageRequestInfo(request, deps.publicUrl), page, list.count, list.results);
}

export const userParams = {
  type: 'object',
  required: ['uuid'],
  properties: { uuid: { type: 'string', description: 'a user uuid, or @me' } },
} as const;

export const organizationParams = {
  type: 'object',
  required: ['id'],
  properties: { id: { type: 'string', description: 'an organization id (uuid), or @current' } },
} as const;

export const memberParams = {
  type: 'object',
  required: ['id', 'user_uuid'],
  properties: {
    id: organizationParams.properties.id,
    user_uuid: { type: 'string', description: "the member's user uuid, or @me" },
  },
} as const;

export const featureParams = {
  type: 'object',
  required: ['project_id', 'id'],
  properties: { project_id: projectParams.properties.project_id, id: uuidParam },
} as const;

export const keyParams = {
  type: 'object',
  required: ['id'],
  properties: { id: { type: 'string', maxLength: 200 } },
} as const;

export const PROJECT = '/api/projects/:project_id';

export function itemId(param: string): number {
  const id = parseIntId(param);
  if (!id) throw new NotFoundError();
  return id;
}
