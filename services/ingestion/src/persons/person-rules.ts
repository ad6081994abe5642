// Pure person rules, PostHog semantics: what an event asks of its person (property updates,
// identify and alias merges), how $set / $set_once / $unset apply, how two persons' properties
// combine on a merge, and which distinct ids must never be merged on.

export type PropertyUpdate = {
  set: Record<string, unknown>;
  setOnce: Record<string, unknown>;
  unset: string[];
};

export type PersonIntent =
  /** Get or create the person of distinctId, then apply the update. */
  | { kind: 'update'; distinctId: string; update: PropertyUpdate | null; identify: boolean }
  /**
   * Make sourceDistinctId's person part of targetDistinctId's person, then apply the update.
   * guardIdentified: refuse to merge away a source person that is already identified
   * ($identify; PostHog's rule against merging two known users).
   */
  | {
      kind: 'merge';
      targetDistinctId: string;
      sourceDistinctId: string;
      guardIdentified: boolean;
      update: PropertyUpdate | null;
    };

// PostHog refuses to merge on these (a client sending "null" as the anonymous id would
// otherwise merge every user into one person).
const ILLEGAL_CASE_INSENSITIVE = new Set([
  'anonymous',
  'guest',
  'distinctid',
  'distinct_id',
  'id',
  'not_authenticated',
  'email',
  'undefined',
  'true',
  'false',
]);
const ILLEGAL_CASE_SENSITIVE = new Set(['[object Object]', 'NaN', 'None', 'none', 'null', '0']);

export function isDistinctIdIllegal(id: string): boolean {
  const trimmed = id.trim();
  return (
    trimmed === '' ||
    ILLEGAL_CASE_INSENSITIVE.has(trimmed.toLowerCase()) ||
    ILLEGAL_CASE_SENSITIVE.has(trimmed)
  );
}

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/** The $set / $set_once / $unset of an event's properties, or null when it has none. */
export function propertyUpdateOf(properties: Record<string, unknown>): PropertyUpdate | null {
  const set = isObject(properties.$set) ? properties.$set : {};
  const setOnce = isObject(properties.$set_once) ? properties.$set_once : {};
  const rawUnset = properties.$unset;
  const unset = Array.isArray(rawUnset)
    ? rawUnset.filter((k): k is string => typeof k === 'string')
    : isObject(rawUnset)
      ? Object.keys(rawUnset)
      : [];
  if (Object.keys(set).length === 0 && Object.keys(setOnce).length === 0 && unset.length === 0) return null;
  return { set, setOnce, unset };
}

export function personIntentOf(
  event: string,
  distinctId: string,
  properties: Record<string, unknown>,
): PersonIntent {
  const update = propertyUpdateOf(properties);
  if (event === '$identify') {
    const anon = properties.$anon_distinct_id;
    if (
      typeof anon === 'string' &&
      anon !== distinctId &&
      !isDistinctIdIllegal(anon) &&
      !isDistinctIdIllegal(distinctId)
    ) {
      return {
        kind: 'merge',
        targetDistinctId: distinctId,
        sourceDistinctId: anon,
        guardIdentified: true,
        update,
      };
    }
    return { kind: 'update', distinctId, update, identify: true };
  }
  if (event === '$create_alias') {
    const alias = properties.alias;
    const aliasId = typeof alias === 'string' ? alias : typeof alias === 'number' ? String(alias) : undefined;
    // docs/interface.md, "Event kinds": the request's distinct_id is merged into the alias, which becomes the main id.
    if (
      aliasId !== undefined &&
      aliasId !== distinctId &&
      !isDistinctIdIllegal(aliasId) &&
      !isDistinctIdIllegal(distinctId)
    ) {
      return {
        kind: 'merge',
        targetDistinctId: aliasId,
        sourceDistinctId: distinctId,
        guardIdentified: false,
        update,
      };
    }
    return { kind: 'update', distinctId, update, identify: false };
  }
  return { kind: 'update', distinctId, update, identify: false };
}

/** Recursive, but over property values already bounded to MAX_JSON_DEPTH by prepare. */
export function jsonEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a)) {
    const bb = b as unknown[];
    return a.length === bb.length && a.every((v, i) => jsonEqual(v, bb[i]));
  }
  const ak = Object.keys(a);
  const bo = b as Record<string, unknown>;
  if (ak.length !== Object.keys(bo).length) return false;
  return ak.every(
    (k) => Object.prototype.hasOwnProperty.call(bo, k) && jsonEqual((a as Record<string, unknown>)[k], bo[k]),
  );
}

/**
 * `target[key] = value` as an own data property: plain assignment to a client key named
 * `__proto__` would replace the object's prototype instead of storing the property.
 */
function setOwn(target: Record<string, unknown>, key: string, value: unknown): void {
  if (key === '__proto__')
    Object.defineProperty(target, key, { value, writable: true, enumerable: true, configurable: true });
  else target[key] = value;
}

/**
 * PostHog's order: $set_once fills keys that are absent, $set overwrites, $unset removes.
 * Mutates `properties` and says whether anything changed (an unchanged person is not written).
 */
export function applyPropertyUpdate(
  properties: Record<string, unknown>,
  update: PropertyUpdate | null,
): boolean {
  if (!update) return false;
  let changed = false;
  for (const [k, v] of Object.entries(update.setOnce)) {
    if (!Object.prototype.hasOwnProperty.call(properties, k)) {
      setOwn(properties, k, v);
      changed = true;
    }
  }
  for (const [k, v] of Object.entries(update.set)) {
    if (!Object.prototype.hasOwnProperty.call(properties, k) || !jsonEqual(properties[k], v)) {
      setOwn(properties, k, v);
      changed = true;
    }
  }
  for (const k of update.unset) {
    if (Object.prototype.hasOwnProperty.call(properties, k)) {
      delete properties[k];
      changed = true;
    }
  }
  return changed;
}

/** Merged person properties: the surviving (target) person's values win, the source fills gaps. */
export function mergePersonProperties(
  target: Record<string, unknown>,
  source: Record<string, unknown>,
): Record<string, unknown> {
  return { ...source, ...target };
}
