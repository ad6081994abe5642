// Credentials: project API keys (public, sent by SDKs), personal API keys (secret, stored only
// as a hash), scopes and backup code generation. Shared by management and the CLI. Passwords:
// password.ts; backup code hashing: backup-codes.ts; encrypted secrets: secret-box.ts.
import { createHash, randomBytes } from 'node:crypto';

export const SCOPES = [
  'user:read',
  'user:write',
  'project:read',
  'project:write',
  'organization:read',
  'organization:write',
  'organization_member:read',
  'organization_member:write',
  'early_access_feature:read',
  'early_access_feature:write',
  'feature_flag:read',
  'feature_flag:write',
  'cohort:read',
  'cohort:write',
  'person:read',
  'person:write',
  // PostHog's scope for its query API and the events endpoints.
  'query:read',
  'query:write',
  'personal_api_key:read',
  'personal_api_key:write',
  'event_definition:read',
  'event_definition:write',
  'property_definition:read',
  'property_definition:write',
  'group:read',
  'group:write',
  'insight:read',
  'insight:write',
  'dashboard:read',
  'dashboard:write',
  'annotation:read',
  'annotation:write',
] as const;
export type Scope = (typeof SCOPES)[number] | '*';

export function isScope(value: string): value is Scope {
  return value === '*' || (SCOPES as readonly string[]).includes(value);
}

/** A key holding `x:write` may also read `x`, as in PostHog; `*` holds everything. */
export function hasScope(granted: readonly string[], required: Scope): boolean {
  if (granted.includes('*') || granted.includes(required)) return true;
  const [object, action] = required.split(':');
  return action === 'read' && granted.includes(`${object}:write`);
}

const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

function randomString(length: number): string {
  // Rejection sampling keeps every character equally likely.
  let out = '';
  while (out.length < length) {
    for (const b of randomBytes(length * 2)) {
      if (b < 248 && out.length < length) out += ALPHABET[b % 62];
    }
  }
  return out;
}

export function generateProjectToken(): string {
  return `phc_${randomString(43)}`;
}

export function generatePersonalApiKey(): string {
  return `phx_${randomString(47)}`;
}

/** A project secret API key for local evaluation (PostHog's `phs_` keys); stored only hashed. */
export function generateProjectSecretKey(): string {
  return `phs_${randomString(43)}`;
}

export function generateKeyId(): string {
  return randomString(24);
}

/** Personal keys are long random strings, so a fast unsalted hash is enough to look them up. */
export function hashPersonalApiKey(value: string): string {
  return `sha256$${createHash('sha256').update(value).digest('hex')}`;
}

/**
 * Project secret keys are random like personal keys, so they are hashed the same way: one
 * indexed equality lookup of `teams.secret_api_token_hash` (or its backup) finds the project.
 */
export function hashProjectSecretKey(value: string): string {
  return hashPersonalApiKey(value);
}

export function maskKey(value: string): string {
  return `${value.slice(0, 4)}...${value.slice(-4)}`;
}

/** One-time backup codes for two-factor auth (about 51 bits each); stored with hashBackupCode. */
export function generateBackupCode(): string {
  const raw = randomString(10).toLowerCase();
  return `${raw.slice(0, 5)}-${raw.slice(5)}`;
}
