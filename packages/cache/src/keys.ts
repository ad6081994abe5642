// The Redis keys Sett uses, in one place, with their value formats. Management writes tokens
// and flag lists, ingestion writes group type mappings, capture and decide read.

const PREFIX = 'sett';

export const redisKeys = {
  /** JSON ProjectRef, or the string "null" for a token known not to exist (short TTL). */
  token: (token: string) => `${PREFIX}:token:${token}`,
  /** JSON FlagList of the project: every non-deleted flag definition. */
  flags: (teamId: number) => `${PREFIX}:flags:${teamId}`,
  /** JSON object group type index -> group type name. */
  groupTypes: (teamId: number) => `${PREFIX}:group_types:${teamId}`,
  /** Set of organization ids over their feature flag quota. */
  quotaLimitedFlags: () => `${PREFIX}:quota_limited:feature_flags`,
  /** Counter of flag evaluation requests of an organization in a billing period (YYYY-MM). */
  flagUsage: (organizationId: string, period: string) =>
    `${PREFIX}:usage:feature_flags:${organizationId}:${period}`,
  /** Pub/sub channel: a project's flag list changed (message: team id). */
  flagsChangedChannel: () => `${PREFIX}:flags_changed`,
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

export function encodeFlagList<F>(list: FlagList<F>): string {
  return JSON.stringify({ team_id: list.teamId, updated_at: list.updatedAt, flags: list.flags });
}

export function decodeFlagList<F>(raw: string | null): FlagList<F> | undefined {
  if (raw === null) return undefined;
  try {
    const v = JSON.parse(raw) as { team_id?: unknown; updated_at?: unknown; flags?: unknown };
    if (typeof v.team_id === 'number' && Array.isArray(v.flags)) {
      return {
        teamId: v.team_id,
        updatedAt: typeof v.updated_at === 'number' ? v.updated_at : 0,
        flags: v.flags as F[],
      };
    }
  } catch {
    // corrupt: a miss
  }
  return undefined;
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
