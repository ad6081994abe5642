export {
  SCOPES,
  isScope,
  hasScope,
  generateProjectToken,
  generatePersonalApiKey,
  generateProjectSecretKey,
  generateKeyId,
  hashPersonalApiKey,
  hashProjectSecretKey,
  maskKey,
  generateBackupCode,
} from './keys';
export type { Scope } from './keys';
export {
  PASSWORD_SCRYPT,
  PASSWORD_HASH_CONCURRENCY,
  PASSWORD_HASH_MAX_QUEUED,
  PasswordHashingBusyError,
  createPasswordHasher,
  hashPassword,
  checkPassword,
  verifyPassword,
} from './password';
export type { ScryptParams, ScryptFn, PasswordCheck, PasswordHasher } from './password';
export {
  SecretDecryptionError,
  deriveKey,
  deriveCredentialKeys,
  encryptSecret,
  decryptSecret,
  isEncryptedSecret,
  openTotpSecret,
} from './secret-box';
export type { CredentialKeys } from './secret-box';
export {
  hashBackupCode,
  legacyBackupCodeHash,
  backupCodeLookupHashes,
  upgradeLegacyBackupCodeHash,
} from './backup-codes';
export { loadOrCreateKeyFile } from './key-file';
export {
  FLAG_PAYLOAD_KEY_PURPOSE,
  deriveFlagPayloadKey,
  encryptFlagPayloads,
  decryptFlagPayload,
  decryptFlagPayloads,
} from './flag-payloads';
export {
  UNKNOWN_KEY_LIMIT,
  UNKNOWN_KEY_WINDOW_MS,
  PROBATION_PER_SECOND,
  PROBATION_BURST,
  createKeyLookup,
} from './key-lookup';
export type { KeyLookup, KeyLookupOptions, KeyLookupResult } from './key-lookup';
