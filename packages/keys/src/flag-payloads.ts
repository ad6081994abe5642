// Encrypted feature flag payloads (PostHog's has_encrypted_payloads, used by remote
// configuration flags): each payload value is encrypted on its own with secret-box's
// AES-256-GCM under a key derived for this purpose only, bound to its project by associated
// data, so a value copied into another project's flag does not decrypt. Decrypted only by
// management (the remote_config endpoint and the flag API).
import { decryptSecret, deriveKey, encryptSecret } from './secret-box';

export const FLAG_PAYLOAD_KEY_PURPOSE = 'sett/flag-payload/v1';

export function deriveFlagPayloadKey(master: Buffer): Buffer {
  return deriveKey(master, FLAG_PAYLOAD_KEY_PURPOSE);
}

const associatedData = (teamId: number) => `team:${teamId}`;

/** Payloads are JSON strings in PostHog's filters; anything else is stored as its JSON text. */
function payloadText(value: unknown): string {
  return typeof value === 'string' ? value : JSON.stringify(value ?? null);
}

/** Each value of `payloads` encrypted (`v1:iv:tag:ct`). */
export function encryptFlagPayloads(
  payloads: Record<string, unknown>,
  key: Buffer,
  teamId: number,
): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(payloads))
    out[name] = encryptSecret(payloadText(value), key, associatedData(teamId));
  return out;
}

/** The payload's JSON text; throws SecretDecryptionError for anything this key did not encrypt for this project. */
export function decryptFlagPayload(stored: unknown, key: Buffer, teamId: number): string {
  return decryptSecret(typeof stored === 'string' ? stored : '', key, associatedData(teamId));
}

/** Each value of `payloads` decrypted; see decryptFlagPayload. */
export function decryptFlagPayloads(
  payloads: Record<string, unknown>,
  key: Buffer,
  teamId: number,
): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(payloads)) out[name] = decryptFlagPayload(value, key, teamId);
  return out;
}
