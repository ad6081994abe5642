// The one UUID rule: 8-4-4-4-12 hex digits, any case, nothing around it. ajv-formats' `uuid`
// format also takes a `urn:uuid:` prefix, which Postgres' uuid type refuses, so schemas naming a
// uuid column use UUID_PATTERN (validation messages still call it the "uuid" format).
export const UUID_PATTERN = '^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$';

const UUID_RE = new RegExp(UUID_PATTERN);

export function isUuid(value: string): boolean {
  return UUID_RE.test(value);
}
