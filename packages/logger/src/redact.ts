// Secret redaction for log records. Applied to every record before it is formatted, so a
// careless `logger.info('x', { headers })` still never writes an api key or a password.

const SECRET_KEY =
  /(^|_|-)(api_?key|token|password|passwd|secret|authorization|cookie|current_password|personal_api_key|secure_value|totp|backup_codes?)$/i;
// Project keys (phc_), personal keys (phx_) and bearer credentials embedded in free text.
const SECRET_VALUE = /\b(phc|phx|phs)_[A-Za-z0-9]{4,}|\bBearer\s+[A-Za-z0-9._~+/=-]+/g;

export const REDACTED = '[REDACTED]';

export function redactString(value: string): string {
  return value.replace(SECRET_VALUE, (m) =>
    m.startsWith('Bearer') ? `Bearer ${REDACTED}` : `${m.slice(0, 4)}${REDACTED}`,
  );
}

export function redact(value: unknown, depth = 0, seen = new WeakSet<object>()): unknown {
  if (typeof value === 'string') return redactString(value);
  if (value === null || typeof value !== 'object') return value;
  if (depth > 8 || seen.has(value)) return '[…]';
  seen.add(value);
  if (value instanceof Error) {
    return {
      name: value.name,
      message: redactString(value.message),
      stack: value.stack && redactString(value.stack),
    };
  }
  if (Array.isArray(value)) return value.map((v) => redact(v, depth + 1, seen));
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) {
    out[k] =
      SECRET_KEY.test(k) && v !== undefined && v !== null && v !== '' ? REDACTED : redact(v, depth + 1, seen);
  }
  return out;
}
