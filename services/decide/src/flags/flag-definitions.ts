// A project's flag definitions as decide holds them in memory: normalised from whatever the
// writer stored (Redis JSON or Postgres rows), with what each flag needs precomputed once per
// list so that a request only checks set membership. Pure.
import { requiredGroupProperties, requiredPersonProperties, type FlagDefinition } from '@sett/flags';

export interface PreparedFlag {
  flag: FlagDefinition;
  /** Person property keys this flag reads (super conditions and enrollment included). */
  personKeys: string[];
  /** Group type indexes whose properties this flag reads. */
  groupIndexes: number[];
}

export interface ProjectFlags {
  teamId: number;
  /** Live flags (active and not deleted), in their stored order. */
  flags: FlagDefinition[];
  prepared: PreparedFlag[];
  /** group type index -> group type name */
  groupTypes: Record<number, string>;
  personKeys: Set<string>;
  groupKeys: Map<number, Set<string>>;
  /** Keys of live flags with ensure_experience_continuity. */
  continuityKeys: string[];
}

type Raw = Record<string, unknown>;

function pick(raw: Raw, snake: string, camel: string): unknown {
  return raw[snake] !== undefined ? raw[snake] : raw[camel];
}

/**
 * Accepts a stored flag in PostHog's snake_case (what management writes) or Prisma's camelCase,
 * so a writer's choice of serialisation cannot break evaluation. Malformed filters are kept:
 * evaluation reports them as errors for that flag only.
 */
export function toFlagDefinition(raw: unknown, teamId: number): FlagDefinition | undefined {
  if (!raw || typeof raw !== 'object') return undefined;
  const r = raw as Raw;
  if (typeof r.key !== 'string') return undefined;
  let filters = r.filters;
  if (typeof filters === 'string') {
    try {
      filters = JSON.parse(filters);
    } catch {
      // left as is: evaluateFlag rejects non-object filters as an error of this flag
    }
  }
  const id = Number(r.id);
  const version = Number(r.version ?? 1);
  return {
    id: Number.isFinite(id) ? id : 0,
    team_id: Number(pick(r, 'team_id', 'teamId') ?? teamId),
    key: r.key,
    name: typeof r.name === 'string' ? r.name : '',
    filters: (filters ?? {}) as FlagDefinition['filters'],
    active: r.active !== false,
    deleted: r.deleted === true,
    ensure_experience_continuity:
      pick(r, 'ensure_experience_continuity', 'ensureExperienceContinuity') === true,
    version: Number.isFinite(version) ? version : 1,
    has_encrypted_payloads: pick(r, 'has_encrypted_payloads', 'hasEncryptedPayloads') === true,
  };
}

export function prepareProjectFlags(
  teamId: number,
  rawFlags: unknown[],
  groupTypes: Record<number, string>,
): ProjectFlags {
  const flags = rawFlags
    .map((raw) => toFlagDefinition(raw, teamId))
    .filter((f): f is FlagDefinition => f !== undefined && f.active && !f.deleted);
  const prepared = flags.map((flag) => {
    // A flag whose filters are too malformed to inspect needs nothing; evaluation errors on it.
    let personKeys: string[] = [];
    let groupIndexes: number[] = [];
    try {
      personKeys = [...requiredPersonProperties([flag])];
      groupIndexes = [...requiredGroupProperties([flag]).keys()];
      const aggregation = flag.filters?.aggregation_group_type_index;
      if (typeof aggregation === 'number' && !groupIndexes.includes(aggregation))
        groupIndexes.push(aggregation);
    } catch {
      // see above
    }
    return { flag, personKeys, groupIndexes };
  });
  let personKeys = new Set<string>();
  let groupKeys = new Map<number, Set<string>>();
  try {
    personKeys = requiredPersonProperties(flags);
    groupKeys = requiredGroupProperties(flags);
  } catch {
    // malformed filters somewhere: fall back to the per-flag union
    for (const p of prepared) for (const k of p.personKeys) personKeys.add(k);
  }
  return {
    teamId,
    flags,
    prepared,
    groupTypes,
    personKeys,
    groupKeys,
    continuityKeys: flags.filter((f) => f.ensure_experience_continuity).map((f) => f.key),
  };
}
