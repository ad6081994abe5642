// The console's only way to the server: Sett's public management API, with the same endpoints
// and shapes as any other client. The session cookie goes with every request (same origin); a
// write echoes the CSRF cookie in X-CSRFToken, as the API requires of sessions. An error is an
// ApiError carrying the API's own `detail`, which the pages show as it is.
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    detail: string,
    readonly attr: string | null = null,
  ) {
    super(detail);
  }
}

function cookie(name: string): string {
  for (const part of document.cookie.split(';')) {
    const [k, ...v] = part.trim().split('=');
    if (k === name) return v.join('=');
  }
  return '';
}

/** `body`: JSON, or a FormData sent as multipart (a CSV upload). */
export async function api<T>(method: string, path: string, body?: unknown): Promise<T> {
  const headers: Record<string, string> = { accept: 'application/json' };
  const form = body instanceof FormData;
  if (body !== undefined && !form) headers['content-type'] = 'application/json';
  if (method !== 'GET') headers['x-csrftoken'] = cookie('sett_csrftoken');
  let res: Response;
  try {
    res = await fetch(path, {
      method,
      headers,
      credentials: 'same-origin',
      body: body === undefined ? undefined : form ? body : JSON.stringify(body),
    });
  } catch {
    throw new ApiError(0, 'network', 'Sett could not be reached. Check the connection and try again.');
  }
  const text = await res.text();
  let json: unknown;
  try {
    json = text ? JSON.parse(text) : undefined;
  } catch {
    json = undefined;
  }
  if (!res.ok) {
    const e = (json ?? {}) as { code?: string; detail?: string; attr?: string | null };
    throw new ApiError(
      res.status,
      e.code ?? 'error',
      e.detail ?? `The server answered ${res.status}.`,
      e.attr ?? null,
    );
  }
  return json as T;
}

export interface Me {
  uuid: string;
  email: string;
  first_name: string;
  is_staff: boolean;
  team: { id: number; name: string; api_token: string } | null;
  organization: { id: string; name: string } | null;
}

export interface EventRow {
  id: string;
  event: string;
  distinct_id: string;
  timestamp: string;
  properties: Record<string, unknown>;
  person: { uuid: string; distinct_ids: string[]; properties: Record<string, unknown> } | null;
}

export interface Page<T> {
  next: string | null;
  results: T[];
}

export interface FlagCondition {
  properties: Array<{ key: string; value: unknown; operator?: string; type: string }>;
  rollout_percentage: number | null;
  variant?: string | null;
}

export interface Flag {
  id: number;
  key: string;
  name: string;
  active: boolean;
  filters: {
    groups: FlagCondition[];
    multivariate?: { variants: Array<{ key: string; rollout_percentage: number }> } | null;
    payloads?: Record<string, unknown>;
  };
  created_at: string;
}

export interface List<T> {
  count: number;
  next: string | null;
  results: T[];
}

/** A mutation's error, shown next to what failed. */
export function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

export interface Person {
  id: string;
  uuid: string;
  name?: string;
  distinct_ids: string[];
  properties: Record<string, unknown>;
  created_at: string;
}

export interface PersonDeletion {
  id: number;
  status: 'queued' | 'running' | 'succeeded' | 'failed';
  phase: string;
  delete_events: boolean;
  distinct_id_count: number;
  events_deleted: number;
  last_error: string | null;
  run_after: string;
  created_at: string;
  finished_at: string | null;
}

export interface QueryAnswer {
  results: unknown;
  is_cached?: boolean;
  last_refresh?: string;
}

export interface Insight {
  id: number;
  short_id: string;
  name: string | null;
  query: { kind: string; source: { kind: string } & Record<string, unknown> } | null;
  result: unknown;
  dashboards: number[];
  last_refresh: string | null;
  query_status: { error: boolean; error_message: string } | null;
}

export interface Dashboard {
  id: number;
  name: string | null;
  description: string;
  pinned: boolean;
  tiles?: Array<{
    id: number;
    insight: Insight | null;
    text: { body: string } | null;
    error: { message: string } | null;
  }>;
}

export interface Organization {
  id: string;
  name: string;
  membership_level: number | null;
}

export interface Member {
  id: string;
  level: number;
  user: { uuid: string; email: string; first_name: string };
}

export interface Project {
  id: number;
  name: string;
  api_token: string;
  data_retention_days: number | null;
  secret_api_token?: string | null;
}

export interface PersonalKey {
  id: string;
  label: string;
  mask_value: string;
  scopes: string[];
  last_used_at: string | null;
  value?: string;
}

export const LEVEL_NAMES: Record<number, string> = { 1: 'member', 8: 'admin', 15: 'owner' };

export interface Cohort {
  id: number;
  name: string;
  description: string;
  is_static: boolean;
  count: number | null;
  filters: unknown;
}

export interface EarlyAccessFeature {
  id: string;
  name: string;
  description: string;
  stage: string;
  feature_flag: { key: string } | null;
}
