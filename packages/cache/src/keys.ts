// The Redis keys Sett uses, in one place, with their value formats. Management writes tokens
// and flag lists, ingestion writes group type mappings, capture and decide read; decide
// writes remote config documents it rebuilt on a miss.

const PREFIX = 'sett';

export const redisKeys = {
  /** JSON ProjectRef, or the string "null" for a token known not to exist (short TTL). */
  token: (token: string) => `${PREFIX}:token:${token}`,
  /** JSON FlagList of the project: every non-deleted flag definition. */
  flags: (teamId: number) => `${PREFIX}:flags:${teamId}`,
  /**
   * JSON CohortList of the project: every non-deleted cohort's definition (static cohorts
   * without their members). Written by management with every cohort write; decide reads it in
   * the same MGET as the flag list.
   */
  cohorts: (teamId: number) => `${PREFIX}:cohorts:${teamId}`,
  /** JSON object group type index -> group type name. */
  groupTypes: (teamId: number) => `${PREFIX}:group_types:${teamId}`,
  /** Set of organization ids over their feature flag quota. */
  quotaLimitedFlags: () => `${PREFIX}:quota_limited:feature_flags`,
  /** Counter of flag evaluation requests of an organization in a billing period (YYYY-MM). */
  flagUsage: (organizationId: string, period: string) =>
    `${PREFIX}:usage:feature_flags:${organizationId}:${period}`,
  /**
   * Pub/sub channel: a project token stopped naming its project (rotated by reset_token, or the
   * project was deleted); message: the token. Token resolvers drop their in-process entry.
   */
  tokenChangedChannel: () => `${PREFIX}:token_changed`,
  /** Pub/sub channel: a project's flag list changed (message: team id). */
  flagsChangedChannel: () => `${PREFIX}:flags_changed`,
  /**
   * JSON remote config document of the project (what `/array/<token>/config` serves, PostHog's
   * field names). Written only by decide on a miss, with a TTL; deleted by every project
   * settings write and every flag list write.
   */
  remoteConfig: (teamId: number) => `${PREFIX}:remote_config:${teamId}`,
  /** Pub/sub channel: a project's remote config must be rebuilt (message: team id). */
  remoteConfigChangedChannel: () => `${PREFIX}:remote_config_changed`,
  /**
   * Counter bumped by ingestion once per batch for every project the batch stored events of: a
   * cached query answer is served only while the version it was computed at is current.
   */
  queryDataVersion: (teamId: number) => `${PREFIX}:query_data_version:${teamId}`,
  /** JSON {version, last_refresh, answer} of one query of a project (management's result cache). */
  queryResult: (teamId: number, cacheKey: string) => `${PREFIX}:query_result:${teamId}:${cacheKey}`,
} as const;

export interface ProjectRef {
  teamId: number;
  organizationId: string;
}

export interface FlagList<F = unknown> {
  teamId: number;
  /** Milliseconds since the epoch when the list was written; decide reports staleness with it. */
  updatedAt: number;
  flags: F[];
}

export interface CohortList<C = unknown> {
  teamId: number;
  /** Milliseconds since the epoch when the list was written. */
  updatedAt: number;
  cohorts: C[];
}

export function encodeProjectRef(ref: ProjectRef | null): string {
  return ref ? JSON.stringify({ team_id: ref.teamId, organization_id: ref.organizationId }) : 'null';
}

/** undefined: not a valid entry (treat as a miss); null: a cached "unknown token". */
export function decodeProjectRef(raw: string | null): ProjectRef | null | undefined {
  if (raw === null) return undefined;
  if (raw === 'null') return null;
  try {
    const v = JSON.parse(raw) as { team_id?: unknown; organization_id?: unknown };
    if (typeof v.team_id === 'number' && typeof v.organization_id === 'string') {
      return { teamId: v.team_id, organizationId: v.organization_id };
    }
  } catch {
    // fall through: a corrupt entry is a miss and gets rewritten from Postgres
  }
  return undefined;
}

/**
 * Flag lists and cohort lists share one envelope: `{team_id, updated_at, <field>: [...]}`.
 * A value that does not parse or lacks the fields is a miss (rebuilt from Postgres).
 */
function encodeTeamList(field: string, teamId: number, updatedAt: number, items: unknown[]): string {
  return JSON.stringify({ team_id: teamId, updated_at: updatedAt, [field]: items });
}

function decodeTeamList<T>(
  field: string,
  raw: string | null,
): { teamId: number; updatedAt: number; items: T[] } | undefined {
  if (raw === null) return undefined;
  try {
    const v = JSON.parse(raw) as Record<string, unknown>;
    const items = v[field];
    if (typeof v.team_id === 'number' && Array.isArray(items)) {
      return {
        teamId: v.team_id,
        updatedAt: typeof v.updated_at === 'number' ? v.updated_at : 0,
        items: items as T[],
      };
    }
  } catch {
    // corrupt: a miss
  }
  return undefined;
}

export function encodeFlagList<F>(list: FlagList<F>): string {
  return encodeTeamList('flags', list.teamId, list.updatedAt, list.flags);
}

export function decodeFlagList<F>(raw: string | null): FlagList<F> | undefined {
  const list = decodeTeamList<F>('flags', raw);
  return list && { teamId: list.teamId, updatedAt: list.updatedAt, flags: list.items };
}

export function encodeCohortList<C>(list: CohortList<C>): string {
  return encodeTeamList('cohorts', list.teamId, list.updatedAt, list.cohorts);
}

export function decodeCohortList<C>(raw: string | null): CohortList<C> | undefined {
  const list = decodeTeamList<C>('cohorts', raw);
  return list && { teamId: list.teamId, updatedAt: list.updatedAt, cohorts: list.items };
}

export function decodeGroupTypes(raw: string | null): Record<number, string> | undefined {
  if (raw === null) return undefined;
  try {
    const v = JSON.parse(raw) as Record<string, unknown>;
    const out: Record<number, string> = {};
    for (const [k, name] of Object.entries(v)) if (typeof name === 'string') out[Number(k)] = name;
    return out;
  } catch {
    return undefined;
  }
}

export function billingPeriod(now: Date): string {
  return now.toISOString().slice(0, 7);
}
