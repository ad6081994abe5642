// The management API through the edge, with the personal key that `pnpm start` printed, and a
// raw `/flags` call: what the SDKs' answers are compared with.
import type { SettStack } from './stack';

export class HttpError extends Error {
  constructor(
    readonly request: string,
    readonly status: number,
    readonly body: string,
  ) {
    super(`${request} -> ${status} ${body.slice(0, 2000)}`);
  }
}

export async function api<T = Record<string, unknown>>(
  stack: SettStack,
  method: string,
  path: string,
  body?: unknown,
): Promise<T> {
  const res = await fetch(`${stack.edgeUrl}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${stack.personalKey}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  if (res.status >= 300)
    throw new HttpError(
      `${method} ${path} ${body === undefined ? '' : JSON.stringify(body)}`,
      res.status,
      text,
    );
  return (text ? JSON.parse(text) : {}) as T;
}

export interface FlagSpec {
  key: string;
  name?: string;
  active?: boolean;
  filters: Record<string, unknown>;
}

export async function createFlag(stack: SettStack, spec: FlagSpec): Promise<{ id: number; key: string }> {
  return api(stack, 'POST', `/api/projects/${stack.projectId}/feature_flags/`, {
    name: spec.name ?? `e2e ${spec.key}`,
    active: spec.active ?? true,
    ...spec,
  });
}

export interface FlagsAnswer {
  flags: Record<
    string,
    { key: string; enabled: boolean; variant: string | null; metadata?: { payload?: string | null } }
  >;
  errorsWhileComputingFlags: boolean;
  requestId?: string;
}

/** POST /flags?v=2 as a client would, for one distinct id. */
export function remoteFlags(
  stack: SettStack,
  body: Record<string, unknown>,
): Promise<{ status: number; answer: FlagsAnswer; text: string }> {
  return remoteAnswer(stack, '/flags/?v=2', body);
}

/** The value an SDK's getFeatureFlag returns for one flag of a /flags answer. */
export function flagValue(answer: FlagsAnswer, key: string): string | boolean | undefined {
  const f = answer.flags[key];
  if (!f) return undefined;
  return f.enabled ? (f.variant ?? true) : false;
}

export interface CohortSpec {
  name: string;
  description?: string;
  is_static?: boolean;
  /** PostHog's shape: `{properties: {type: "AND"|"OR", values: [...]}}`. */
  filters?: Record<string, unknown>;
}

export interface Cohort {
  id: number;
  name: string;
  is_static: boolean;
  count: number | null;
  filters: Record<string, unknown>;
  deleted: boolean;
}

export async function createCohort(stack: SettStack, spec: CohortSpec): Promise<Cohort> {
  return api<Cohort>(stack, 'POST', `/api/projects/${stack.projectId}/cohorts/`, spec);
}

export async function getCohort(stack: SettStack, id: number): Promise<Cohort> {
  return api<Cohort>(stack, 'GET', `/api/projects/${stack.projectId}/cohorts/${id}/`);
}

/**
 * Adds members to a static cohort by distinct id the way PostHog's UI does: a CSV file (one
 * distinct id a line, a `distinct_id` header) sent as the multipart field `csv` of a PATCH.
 */
export async function uploadCohortCsv(stack: SettStack, id: number, distinctIds: string[]): Promise<Cohort> {
  const form = new FormData();
  const csv = ['distinct_id', ...distinctIds].join('\n') + '\n';
  form.append('csv', new Blob([csv], { type: 'text/csv' }), 'members.csv');
  const path = `/api/projects/${stack.projectId}/cohorts/${id}/`;
  const res = await fetch(`${stack.edgeUrl}${path}`, {
    method: 'PATCH',
    headers: { authorization: `Bearer ${stack.personalKey}` },
    body: form,
  });
  const text = await res.text();
  if (res.status >= 300)
    throw new HttpError(`PATCH ${path} (csv of ${distinctIds.length} ids)`, res.status, text);
  return JSON.parse(text) as Cohort;
}

/** Adds members to a static cohort by distinct id with JSON (PostHog's add_persons_to_static_cohort). */
export async function addCohortMembers(stack: SettStack, id: number, distinctIds: string[]): Promise<Cohort> {
  return api<Cohort>(
    stack,
    'PATCH',
    `/api/projects/${stack.projectId}/cohorts/${id}/add_persons_to_static_cohort/`,
    {
      distinct_ids: distinctIds,
    },
  );
}

export async function removeCohortMember(stack: SettStack, id: number, distinctId: string): Promise<Cohort> {
  return api<Cohort>(
    stack,
    'PATCH',
    `/api/projects/${stack.projectId}/cohorts/${id}/remove_person_from_static_cohort/`,
    { distinct_id: distinctId },
  );
}

/** POST /flags?v=2 or /decide?v=4 with a plain HTTP client (both answer `flags` keyed by flag key). */
export async function remoteAnswer(
  stack: SettStack,
  endpoint: '/flags/?v=2' | '/decide/?v=4',
  body: Record<string, unknown>,
): Promise<{ status: number; answer: FlagsAnswer; text: string }> {
  const res = await fetch(`${stack.edgeUrl}${endpoint}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ token: stack.projectKey, ...body }),
  });
  const text = await res.text();
  let answer: FlagsAnswer;
  try {
    answer = JSON.parse(text) as FlagsAnswer;
  } catch {
    answer = { flags: {}, errorsWhileComputingFlags: true };
  }
  return { status: res.status, answer, text };
}
