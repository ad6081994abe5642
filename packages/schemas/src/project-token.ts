// The shape of a project API key, checked by capture and decide before any lookup: a key that
// cannot be one is refused without touching Redis or Postgres (and NUL or other control
// characters, which Postgres text cannot hold, never reach them). Generated keys are `phc_`
// and 43 alphanumerics; keys set by hand may differ, so the check is the loose one below.

/** Longest project API key accepted (after trimming). */
export const MAX_PROJECT_TOKEN_LENGTH = 64;

const PRINTABLE_ASCII = /^[\x21-\x7e]+$/;

/** A trimmed key is well-formed: 1 to 64 printable ASCII characters, no space or control character. */
export function isWellFormedProjectToken(trimmed: string): boolean {
  return trimmed.length > 0 && trimmed.length <= MAX_PROJECT_TOKEN_LENGTH && PRINTABLE_ASCII.test(trimmed);
}
