export {
  SCOPES,
  isScope,
  hasScope,
  generateProjectToken,
  generatePersonalApiKey,
  generateKeyId,
  hashPersonalApiKey,
  maskKey,
  hashPassword,
  verifyPassword,
  generateBackupCode,
  hashBackupCode,
} from './keys';
export type { Scope } from './keys';
