export { bootstrap } from './bootstrap';
export type { BootstrapOptions, BootstrapResult } from './bootstrap';
export { createPersonalKey, CliError } from './keys-create';
export { runImport, ImportUsageError } from './import/import-command';
export type { ImportOptions, ImportSummary } from './import/import-command';
export { IMPORT_FORMATS } from './import/import-event';
export type { ImportFormat } from './import/import-event';
export { existingStackLines, presentCredentials, writeOwnerOnlyFile } from './credentials-output';
export type { NewCredentials, CredentialsOutputOptions } from './credentials-output';
