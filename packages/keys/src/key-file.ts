// Development only: when SETT_ENCRYPTION_KEY is unset (never in production, config refuses),
// management keeps a random key in a file so encrypted TOTP secrets survive restarts. The
// caller (a composition root) chooses the path; tests use a temporary directory.
import { randomBytes } from 'node:crypto';
import { linkSync, mkdirSync, readFileSync, unlinkSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';

function readKey(path: string): Buffer {
  const text = readFileSync(path, 'utf8').trim();
  if (!/^[0-9a-f]{64}$/i.test(text)) throw new Error(`${path} does not hold a key (64 hex characters).`);
  return Buffer.from(text, 'hex');
}

/**
 * The 32-byte key in `path` (64 hex characters), created with mode 0600 when missing. Creation
 * writes a temporary file and hard-links it into place, so two processes starting at once agree
 * on one key and neither ever reads a half-written file.
 */
export function loadOrCreateKeyFile(path: string): { key: Buffer; created: boolean } {
  try {
    return { key: readKey(path), created: false };
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  const tmp = `${path}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
  writeFileSync(tmp, `${randomBytes(32).toString('hex')}\n`, { mode: 0o600, flag: 'wx' });
  try {
    linkSync(tmp, path);
    return { key: readKey(path), created: true };
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    return { key: readKey(path), created: false };
  } finally {
    unlinkSync(tmp);
  }
}
