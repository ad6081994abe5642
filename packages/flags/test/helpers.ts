// Builders shared by the flag tests: a flag definition with defaults, and a context.
import type { EvaluationContext, FlagDefinition, FlagFilters } from '../src';

let nextId = 1;

export function flag(key: string, filters: FlagFilters, extra: Partial<FlagDefinition> = {}): FlagDefinition {
  return {
    id: nextId++,
    team_id: 1,
    key,
    name: '',
    filters,
    active: true,
    deleted: false,
    ensure_experience_continuity: false,
    version: 1,
    ...extra,
  };
}

export function ctx(distinctId: string, extra: Partial<EvaluationContext> = {}): EvaluationContext {
  return {
    distinctId,
    personProperties: {},
    groups: {},
    groupProperties: {},
    groupTypeMapping: {},
    now: new Date('2024-03-31T12:00:00.000Z'),
    ...extra,
  };
}
