export { bootstrap } from './bootstrap';
export type { BootstrapOptions, BootstrapResult } from './bootstrap';
export { createPersonalKey, CliError } from './keys-create';
export { importHistory } from './import-history';
