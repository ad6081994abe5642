// What client JSON may hold before Sett walks, stores or re-encodes it. Input is hostile: every
// walk here is iterative (an explicit stack), so no nesting depth can overflow the call stack,
// and one rule decides, for every service, which strings Postgres cannot store.
//
// The rule (docs/hardening.md):
// - nesting deeper than MAX_JSON_DEPTH is refused (capture: 400, or the event dropped from a
//   batch; management: 400; ingestion: dead-lettered);
// - U+0000 and lone UTF-16 surrogates cannot be stored by Postgres (text and jsonb). Event data
//   from SDKs is cleaned, each such code unit becoming U+FFFD as PostHog does, because an SDK
//   cannot fix one property and resend; management input is refused with a 400 naming the field,
//   because a person or a script is there to fix it.

/**
 * The deepest nesting accepted, counted in containers from the value given (an event object with
 * `properties: {a: [1]}` is 3 deep). Real SDK events stay under 10; Postgres' jsonb and V8's
 * JSON.stringify start failing in the thousands.
 */
export const MAX_JSON_DEPTH = 64;

// eslint-disable-next-line no-control-regex -- matching NUL is the point
const NEEDS_CLEANING = /\u0000|[\ud800-\udfff]/;
// eslint-disable-next-line no-control-regex -- matching NUL is the point
const NUL = /\u0000/g;
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;

/** What makes a string unstorable, or null when Postgres can hold it. */
export function unstorableReason(s: string): 'nul' | 'lone_surrogate' | null {
  if (!NEEDS_CLEANING.test(s)) return null;
  if (s.includes('\u0000')) return 'nul';
  LONE_SURROGATE.lastIndex = 0;
  return LONE_SURROGATE.test(s) ? 'lone_surrogate' : null;
}

/** The string with NUL and lone surrogates replaced by U+FFFD (unchanged, same object, when clean). */
export function cleanString(s: string): string {
  if (!NEEDS_CLEANING.test(s)) return s;
  return s.replace(NUL, '\ufffd').replace(LONE_SURROGATE, '\ufffd');
}

const isContainer = (v: unknown): v is object => typeof v === 'object' && v !== null;

/**
 * True when `value` nests deeper than `max` containers. Stops at the first level past it. It
 * keeps one frame per open container on the current path, so its memory is bounded by `max`
 * however wide the value is, and it allocates nothing per child (it runs on every event).
 */
export function exceedsDepth(value: unknown, max: number = MAX_JSON_DEPTH): boolean {
  if (!isContainer(value)) return false;
  if (max < 1) return true;
  const nodes: object[] = [value];
  /** Own keys of each open object; null for an array. */
  const keys: Array<string[] | null> = [Array.isArray(value) ? null : Object.keys(value)];
  /** Index of the next child to look at in each open container. */
  const next: number[] = [0];
  outer: while (nodes.length > 0) {
    const top = nodes.length - 1;
    const node = nodes[top] as Record<string, unknown> & unknown[];
    const names = keys[top]!;
    const length = names === null ? node.length : names.length;
    for (let i = next[top]!; i < length; i++) {
      const child = names === null ? node[i] : node[names[i]!];
      if (!isContainer(child)) continue;
      // The child sits at depth nodes.length + 1.
      if (nodes.length >= max) return true;
      next[top] = i + 1;
      nodes.push(child);
      keys.push(Array.isArray(child) ? null : Object.keys(child));
      next.push(0);
      continue outer;
    }
    nodes.pop();
    keys.pop();
    next.pop();
  }
  return false;
}

export type JsonProblem = {
  /** JSON path of the offending value or key, e.g. `properties.a[3]`. */
  path: string;
  reason: 'too_deep' | 'nul' | 'lone_surrogate';
};

const pathOf = (parent: string, key: string | number) =>
  typeof key === 'number'
    ? `${parent}[${key}]`
    : /^[A-Za-z_$][\w$]*$/.test(key)
      ? parent
        ? `${parent}.${key}`
        : key
      : `${parent}[${JSON.stringify(cleanString(key))}]`;

/**
 * The first thing in `value` that Sett will not store: nesting past `maxDepth`, or a key or string
 * with NUL or a lone surrogate. null when the value is safe. `root` prefixes every path.
 */
export function findJsonProblem(
  value: unknown,
  root = '',
  maxDepth: number = MAX_JSON_DEPTH,
): JsonProblem | null {
  const stack: Array<[unknown, string, number]> = [[value, root, 0]];
  while (stack.length > 0) {
    const [node, path, depth] = stack.pop()!;
    if (typeof node === 'string') {
      const reason = unstorableReason(node);
      if (reason) return { path, reason };
      continue;
    }
    if (!isContainer(node)) continue;
    if (depth + 1 > maxDepth) return { path, reason: 'too_deep' };
    if (Array.isArray(node)) {
      for (let i = node.length - 1; i >= 0; i--) stack.push([node[i], pathOf(path, i), depth + 1]);
      continue;
    }
    const entries = Object.entries(node);
    for (let i = entries.length - 1; i >= 0; i--) {
      const [key, child] = entries[i]!;
      const reason = unstorableReason(key);
      if (reason) return { path: pathOf(path, key), reason };
      stack.push([child, pathOf(path, key), depth + 1]);
    }
  }
  return null;
}

/**
 * A copy of `value` with every key and string cleaned (cleanString), built without recursion.
 * Every container is copied; the input is left as it was. Callers bound the depth first.
 */
export function cleanJson<T>(value: T): T {
  if (typeof value === 'string') return cleanString(value) as T;
  if (!isContainer(value)) return value;
  const copy = (node: object): object => (Array.isArray(node) ? [...node] : { ...node });
  const rootCopy = copy(value);
  const stack: object[] = [rootCopy];
  while (stack.length > 0) {
    const node = stack.pop() as Record<string, unknown>;
    if (Array.isArray(node)) {
      for (let i = 0; i < node.length; i++) node[i] = cleanChild(node[i], stack, copy);
      continue;
    }
    for (const key of Object.keys(node)) {
      const child = cleanChild(node[key], stack, copy);
      const cleanKey = cleanString(key);
      if (cleanKey !== key) {
        delete node[key];
        node[cleanKey] = child;
      } else node[key] = child;
    }
  }
  return rootCopy as T;
}

function cleanChild(child: unknown, stack: object[], copy: (node: object) => object): unknown {
  if (typeof child === 'string') return cleanString(child);
  if (!isContainer(child)) return child;
  const c = copy(child);
  stack.push(c);
  return c;
}

/**
 * Removes every `__proto__` key from parsed JSON, in place, without recursion (callers bound the
 * depth first). JSON.parse makes such a key an ordinary own property, but Prisma leaves it out
 * when it stores a Json column, so an answer built from the request would show a key that was
 * never kept. Returns how many keys were removed.
 */
export function dropProtoKeys(value: unknown): number {
  let dropped = 0;
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const node = stack.pop();
    if (!isContainer(node)) continue;
    if (Array.isArray(node)) {
      for (const child of node) if (isContainer(child)) stack.push(child);
      continue;
    }
    if (Object.prototype.hasOwnProperty.call(node, '__proto__')) {
      delete (node as Record<string, unknown>)['__proto__'];
      dropped++;
    }
    for (const child of Object.values(node)) if (isContainer(child)) stack.push(child);
  }
  return dropped;
}

/** PostHog keeps at most this many characters of an event name or distinct id (ingestion cuts). */
export const MAX_NAME_LENGTH = 200;

/**
 * An event name or distinct id as ingestion stores it: cut to MAX_NAME_LENGTH characters, then
 * cleaned. Ingestion writes this form and decide looks persons up by it, so a hostile id (NUL,
 * megabytes) never reaches Postgres as it is and still finds what ingestion wrote for it.
 */
export function storedName(s: string): string {
  return cleanString(s.slice(0, MAX_NAME_LENGTH));
}
